/**
 * The real agents (Claude Code, Codex CLI, opencode), installed from npm into a cache and run
 * offline against a fake provider or any base URL; what they send, checked against every
 * endpoint. Used by `test/system/real-clients.test.ts` and `scripts/capture-clients.mjs`.
 */
export { AGENTS, type Agent, type AgentContext, type AgentSetup, deepMerge } from './clients/agents.js';
export { CLIENT_NAMES, CLIENTS, type ClientName, type ClientSpec } from './clients/catalog.js';
export {
  type CapturedHistory,
  type CheckResult,
  checkHistory,
  ENDPOINT_OPTIONS,
  ENDPOINTS,
  type EndpointName,
  firstDifference,
  historiesOf,
  keptProblems,
} from './clients/checks.js';
export {
  cacheRoot,
  type InstalledClient,
  installClient,
  installDir,
  latestVersion,
  registryReachable,
} from './clients/install.js';
export { type ClientReport, captureAndCheck, failureLines, resultTable, startCompactor } from './clients/report.js';
export { type Capture, type ClientRun, captureClient, DEFAULT_PROMPT, type RunOptions, runClient } from './clients/run.js';
export { diffShapes, type ShapeChange, type Shapes, shapesOf } from './clients/shapes.js';
