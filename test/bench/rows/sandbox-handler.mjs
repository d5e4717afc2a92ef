// The sandboxed handler of the sandbox rows (rows/sandbox.ts), for ours and BullMQ alike (both
// call a module's default export with the job): a tiny job returns at once; a job with
// `sleepMs` holds its sandbox that long.
export default async function handle(job) {
  const ms = job.data && job.data.sleepMs;
  if (ms) await new Promise((resolve) => setTimeout(resolve, ms));
}
