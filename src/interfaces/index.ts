// The public option types of the Nest module.
export * from './processor-options.interface.js';
export * from './register-flow-producer-options.interface.js';
export * from './register-queue-options.interface.js';
export * from './work-queue-module-options.interface.js';
