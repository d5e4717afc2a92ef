/** The sample's multi-tenant queue: each tenant's jobs form a group (docs/groups.md). */
export interface TenantJob {
  /** What to import, e.g. a file name. */
  item: string;
  /** Sample knob: how long the work takes, ms (default 20). */
  workMs?: number;
}

export interface TenantResult {
  tenant: string;
  item: string;
  doneAt: string;
}

export const TENANTS = 'tenants';

/**
 * Per tenant: one job at a time, in the order added (an ordering key), and at most 20 starts a
 * second (a partner API's limit per customer). Every tenant gets its turn: one tenant's backlog
 * never holds the others behind it.
 */
export const TENANT_GROUPS = { concurrency: 1, limiter: { max: 20, durationMs: 1_000 } };
