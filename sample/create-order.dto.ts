import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsBoolean,
  IsInt,
  IsOptional,
  IsString,
  Length,
  Min,
  ValidateNested,
} from 'class-validator';

export class OrderItemDto {
  @IsString()
  @Length(1, 64)
  sku!: string;

  @IsInt()
  @Min(1)
  qty!: number;
}

/** Body of `POST /orders`. */
export class CreateOrderDto {
  @IsString()
  @Length(1, 200)
  customer!: string;

  @IsInt()
  @Min(0)
  amountCents!: number;

  @ValidateNested({ each: true })
  @Type(() => OrderItemDto)
  @ArrayMinSize(1)
  @ArrayMaxSize(100)
  items!: OrderItemDto[];

  /** Sample knob: the payment is declined, so the order fails (dead, with the reason). */
  @IsOptional()
  @IsBoolean()
  decline?: boolean;
}
