// The boundary rules of eslint.boundaries.js (STYLE.md "Boundaries") fire on a deliberate
// violation of each, and stay quiet where the import belongs.
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ESLint } from 'eslint';
import type { Linter } from 'eslint';
import tseslint from 'typescript-eslint';
import { beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../../', import.meta.url));

let eslint: ESLint;

beforeAll(async () => {
  const module = (await import(pathToFileURL(`${root}eslint.boundaries.js`).href)) as {
    boundaries: Linter.Config[];
  };
  eslint = new ESLint({
    cwd: root,
    overrideConfigFile: true,
    overrideConfig: [
      { files: ['**/*.ts'], languageOptions: { parser: tseslint.parser as Linter.Parser } },
      ...module.boundaries,
    ],
  });
});

/** The boundary messages ESLint gives for `code` as if it were the file at `path`. */
const refusals = async (path: string, code: string): Promise<string[]> => {
  const [result] = await eslint.lintText(code, { filePath: `${root}${path}` });
  return (result?.messages ?? []).map((message) => `${message.ruleId}: ${message.message}`);
};

describe('the architecture boundaries, as lint rules', () => {
  it('keeps mongodb in the MongoDB adapters', async () => {
    const code = "import { MongoClient } from 'mongodb';\nexport const c = MongoClient;\n";
    expect(await refusals('services/agent/src/turn/turn-worker.ts', code)).toEqual([
      expect.stringMatching(/no-restricted-imports: .*only the MongoDB adapters/),
    ]);
    expect(await refusals('services/tools/src/execution/mongo-ledger.ts', code)).toEqual([]);
    expect(await refusals('packages/core/src/mongodb/mongo-event-store.ts', code)).toEqual([]);
  });

  it('keeps @nats-io/* in the NATS adapters', async () => {
    const code = "import { connect } from '@nats-io/transport-node';\nexport const c = connect;\n";
    expect(await refusals('services/gateway/src/feed/feed-reader.ts', code)).toEqual([
      expect.stringMatching(/only the NATS adapters/),
    ]);
    expect(await refusals('packages/core/src/nats/nats-event-bus.ts', code)).toEqual([]);
  });

  it('keeps deciders and policies pure: no Node built-ins, NestJS, drivers or proto types', async () => {
    for (const code of [
      "import { randomUUID } from 'node:crypto';\nexport const id = randomUUID;\n",
      "import { Injectable } from '@nestjs/common';\nexport const i = Injectable;\n",
      "import type { Tool } from '@keel/proto/gen/keel/agent/v1/agent';\nexport type T = Tool;\n",
      "import { createLogger } from '@keel/runtime';\nexport const l = createLogger;\n",
    ]) {
      expect(await refusals('services/agent/src/conversation/conversation.decider.ts', code)).toHaveLength(1);
      expect(await refusals('services/tools/src/tool-calls/call-trigger.ts', code)).toHaveLength(1);
    }
    // The egress classifier is pure and may be used by a decider.
    const egress = "import { EgressPolicy } from '@keel/runtime/egress';\nexport const p = EgressPolicy;\n";
    expect(await refusals('services/agent/src/tenant-config/tenant-config.decider.ts', egress)).toEqual([]);
  });

  it('keeps services apart: one service never imports another', async () => {
    const code = "import { AgentModule } from '@keel/agent/module';\nexport const m = AgentModule;\n";
    expect(await refusals('services/tools/src/tools.module.ts', code)).toEqual([
      expect.stringMatching(/tools may not import agent/),
    ]);
    // The gateway too: npm start's composition lives outside every service (apps/dev), the one
    // place that puts the five together.
    expect(await refusals('services/gateway/src/main.ts', code)).toEqual([
      expect.stringMatching(/gateway may not import agent/),
    ]);
    expect(await refusals('apps/dev/src/main.ts', code)).toEqual([]);
  });
});
