// The messages of sandboxed Nest processors (src/sandbox/).

export const sandboxNotObject = (at: string, got: string) =>
  `${at}sandbox must be an object { module, mode }, got ${got}`;
export const sandboxBadModule = (at: string, got: string) =>
  `${at}sandbox.module must be a Nest module (a class, a dynamic module, forwardRef(() => TheModule) or () => import(…)), got ${got}`;
export const sandboxFileUnknown = (at: string) =>
  `${at}the file that declares the class is unknown (the call stack did not say): give sandbox.file`;
export const sandboxShared = (queue: string, classNames: readonly string[]) =>
  `queue "${queue}": a sandboxed @Processor() must be the queue's only one, got ${classNames.join(', ')}`;
export const CANNOT_START_SANDBOX = 'a sandboxed processor cannot start';
export const sandboxNotExported = (at: string, file: string) =>
  `${at}each sandbox imports ${file} to find the class, and it does not export it (export it, or give sandbox.file)`;
export const sandboxCycleHint =
  " (if the module's file imports the processor's file, name the module lazily: sandbox: { module: () => import('./the.module.js').then((m) => m.TheModule) })";
export const sandboxNotProvided = (at: string, module: string, error: string) =>
  `${at}sandbox.module ${module} does not provide the class: ${error}`;
