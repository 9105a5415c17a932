import { serviceKey, type App } from './app.js';

// "Every configured secret" is known in pieces by several parts (the API keys by the composition
// root, provider keys, vault values, webhook secrets by their resources' servers); the daemon puts them
// together here, so that what scrubs foreign text (an upstream's error, a chat session) asks once.

/** Gathers every secret the daemon holds now; provided by its resources part (parts/resources.ts). */
export const SECRETS = serviceKey<() => Promise<string[]>>('secrets');

/**
 * Every secret configured now: the API's keys, provider keys, vault values and webhook secrets.
 * Gathered on each call (vault values and webhook secrets are opened), so ask only when there is
 * foreign text to scrub, never per request.
 */
export const configuredSecrets = (app: App): Promise<string[]> => app.services.get(SECRETS)();
