/** The sample's CPU-heavy domain: rendering reports (simulated), in a sandbox. */
export interface ReportJob {
  /** Pages to render. */
  pages: number;
  /** Sample knob: how long the rendering keeps its thread busy, ms (default 50 per page). */
  busyMs?: number;
}

export interface ReportResult {
  pages: number;
  checksum: number;
  /** When the rendering started and ended (Date.now() in the sandbox). */
  startedAt: number;
  endedAt: number;
}

export const REPORTS = 'reports';
