export * from './redis-server.js';
export * from './keys.js';
export * from './wait.js';
