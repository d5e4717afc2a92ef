import { IsDefined, IsInt, IsOptional, IsString, Length, Matches, Max, Min } from 'class-validator';

/** Body of `POST /jobs`. */
export class CreateJobDto {
  @IsDefined({ message: 'data is required (any JSON value)' })
  data!: unknown;

  @IsOptional()
  @IsString()
  @Length(1, 200)
  name?: string;

  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(9)
  priority?: number;

  @IsOptional()
  @IsInt()
  @Min(0)
  delayMs?: number;

  @IsOptional()
  @IsString()
  @Length(1, 256)
  @Matches(/\D/, { message: 'id must contain a non-digit (numeric ids are generated)' })
  id?: string;
}
