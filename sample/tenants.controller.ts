// The multi-tenant queue over HTTP: a tenant's job goes to the tenant's group, so one
// tenant's big import never holds the others' jobs behind it (docs/groups.md).
import { Body, Controller, Param, Post } from '@nestjs/common';
import { IsDefined, IsInt, IsOptional, Max, Min } from 'class-validator';
import { InjectQueue, type WorkQueue } from '../src/index.js';
import { TENANTS, type TenantJob, type TenantResult } from './tenants.js';

/** Body of `POST /tenants/:id/jobs`. */
export class CreateTenantJobDto {
  @IsDefined({ message: 'data is required: { item, workMs? }' })
  data!: TenantJob;

  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(9)
  priority?: number;
}

@Controller()
export class TenantsController {
  constructor(@InjectQueue(TENANTS) private readonly tenants: WorkQueue<TenantJob, TenantResult>) {}

  /** A job of tenant `id` (its group); a bad tenant id (empty, over 256 bytes) is a 400. */
  @Post('tenants/:id/jobs')
  async create(
    @Param('id') id: string,
    @Body() body: CreateTenantJobDto,
  ): Promise<{ id: string; added: boolean; tenant: string }> {
    const r = await this.tenants.add(body.data, { group: id, priority: body.priority });
    return { ...r, tenant: id };
  }
}
