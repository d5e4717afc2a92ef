/** The sample's domain: sending emails (simulated). */
export interface EmailJob {
  to: string;
  subject?: string;
  /** Sample knob: the digest send fails this many times before it succeeds. */
  failTimes?: number;
  /** Sample knob: the digest send always fails (to see dead-lettering). */
  alwaysFail?: boolean;
}

export interface EmailResult {
  messageId: string;
  sentAt: string;
}

export const EMAILS = 'emails';
