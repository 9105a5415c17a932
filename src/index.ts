// The package's public exports: the typed client, and the daemon for embedding.
export { ApiError, SvcClient, UnreachableError } from './client/client.js';
export { startDaemon, type Daemon, type DaemonOptions } from './daemon.js';
export { verifyWebhook, type VerifyOptions } from './resources/webhooks/verify.js';
