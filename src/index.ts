export { type AppDeps, buildApp, createLogger } from './app.js';
export { Compactor } from './compactor.js';
export { type Config, ConfigSchema, loadConfig } from './config.js';
export { CompactorError, ERRORS, type ErrorCode } from './errors.js';
export { FORMATS } from './formats/registry.js';
export { STRATEGIES } from './strategies/registry.js';
export { windowStrategy } from './strategies/sliding-window.js';
export { TokenCounter } from './tokens/counter.js';
export { resolveModel } from './tokens/models.js';
