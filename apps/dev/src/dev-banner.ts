import {
  CONVERSATION_SERVICE_NAME,
  KEEL_CONVERSATIONS_V1_PACKAGE_NAME,
} from '@keel/proto/keel/conversations/v1/conversations';
import type { DevKey } from './dev-key.js';
import type { DevMasterKeyOrigin } from './dev-master-key.js';
import type { DevSetup } from './dev-setup.js';

/** What the dev mode prints once it is ready. */
export interface DevBannerInput {
  url: string;
  /** The gateway's gRPC address as a client dials it (`127.0.0.1:50051`). */
  grpcAddress: string;
  store: string;
  bus: string;
  readyMs: number;
  operatorKey: string;
  operatorKeyMadeUp: boolean;
  devKey: DevKey;
  setup: DevSetup;
  modelReason: string;
  /** What webhooks and provider baseUrls may reach (KEEL_EGRESS_ALLOW). */
  egress?: string;
  /** Where the master key that seals secrets came from, and the file that keeps a made-up one. */
  masterKey?: { origin: DevMasterKeyOrigin; file: string };
  /** What the start found wrong but worked with (e.g. a stream holding another store's events). */
  warnings?: readonly string[];
}

/** The banner's note on the master key. */
const masterKeyNote = ({ origin, file }: { origin: DevMasterKeyOrigin; file: string }): string => {
  switch (origin) {
    case 'KEEL_MASTER_KEY':
      return 'from KEEL_MASTER_KEY';
    case 'file':
      return `kept in ${file}: secrets sealed on this store open after a restart`;
    case 'new-file':
      return `made up and kept in ${file} (0600): secrets sealed on this store open after a restart`;
    case 'ephemeral':
      return 'made up for this in-memory run (set KEEL_MASTER_KEY to pin one)';
  }
};

const KEY_NOTES: Record<DevKey['origin'], string> = {
  KEEL_DEV_KEY: 'pinned by KEEL_DEV_KEY',
  file: 'saved in KEEL_DEV_KEY_FILE (.keel/dev-key): the same on every start on this store',
  'new-file': 'new, saved in KEEL_DEV_KEY_FILE (.keel/dev-key): the same on every start on this store',
  ephemeral:
    'new on each start: the in-memory store forgets the tenant at exit (set KEEL_DEV_KEY to pin one)',
};

/**
 * The human part of the dev mode's output: where it listens, the keys, and a copy-paste `curl` that
 * streams a turn. The JSON log lines stay on stdout; this goes to stderr.
 */
export const devBanner = (input: DevBannerInput): string => {
  const { url, setup } = input;
  const exports = `export KEEL_URL=${url} KEEL_KEY=${input.devKey.key} KEEL_OPERATOR_KEY=${input.operatorKey}`;
  const curl = [
    `CONV=$(curl -s "$KEEL_URL/v1/conversations" -H "Authorization: Bearer $KEEL_KEY" \\`,
    `  -H 'Content-Type: application/json' -d '{"agentId":"${setup.agentId}"}' | sed -E 's/.*"id":"([^"]+)".*/\\1/')`,
    `curl -N "$KEEL_URL/v1/conversations/$CONV/messages" -H "Authorization: Bearer $KEEL_KEY" \\`,
    `  -H 'Content-Type: application/json' -H 'Accept: text/event-stream' -d '{"content":"What is 6*7?"}'`,
    // Server reflection describes every service: grpcurl needs no .proto files.
    `grpcurl -plaintext -H "authorization: Bearer $KEEL_KEY" ${input.grpcAddress} ${KEEL_CONVERSATIONS_V1_PACKAGE_NAME}.${CONVERSATION_SERVICE_NAME}/ListConversations`,
  ];
  return [
    '',
    `Keel dev mode ready in ${(input.readyMs / 1000).toFixed(1)} s (store: ${input.store}, bus: ${input.bus})`,
    `  base URL      ${url}`,
    `  console       ${url}/console  (sign in with the operator key, or the dev tenant's admin key)`,
    `  gRPC          ${input.grpcAddress}  (with server reflection: grpcurl list, describe and call it)`,
    `  operator key  ${input.operatorKey}${input.operatorKeyMadeUp ? '  (KEEL_OPERATOR_KEY unset: made up for this run)' : ''}`,
    `  dev tenant    ${setup.tenantId}, admin key ${input.devKey.key}`,
    `                (${KEY_NOTES[input.devKey.origin]})`,
    `  demo agent    "${setup.agentId}" on ${setup.model} (${input.modelReason})`,
    ...(input.egress === undefined ? [] : [`  egress        ${input.egress}`]),
    ...(input.masterKey === undefined ? [] : [`  master key    ${masterKeyNote(input.masterKey)}`]),
    ...(input.warnings ?? []).map((warning) => `  WARNING       ${warning}`),
    '',
    'In another shell:',
    `  ${exports}`,
    ...curl.map((line) => `  ${line}`),
    '',
    'Ctrl-C stops it.',
    '',
  ].join('\n');
};
