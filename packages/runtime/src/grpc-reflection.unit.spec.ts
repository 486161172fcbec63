// What DescriptorReflection answers, request by request, decoded as a reflection client decodes
// it; e2e/grpc-reflection.spec.ts drives the same answers with grpcurl over the wire.
import { fromBinary } from '@bufbuild/protobuf';
import type { FileDescriptorProto } from '@bufbuild/protobuf/wkt';
import { FileDescriptorProtoSchema } from '@bufbuild/protobuf/wkt';
import { status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { DescriptorReflection } from './grpc-reflection.js';

const reflection = new DescriptorReflection(['grpc.health.v1.Health', 'keel.agent.v1.AgentService']);

/** The files of a fileDescriptorResponse, decoded. */
const filesOf = (answer: ReturnType<DescriptorReflection['answer']>): FileDescriptorProto[] => {
  if (!('fileDescriptorResponse' in answer)) throw new Error(`not a file answer: ${JSON.stringify(answer)}`);
  return answer.fileDescriptorResponse.fileDescriptorProto.map((bytes) =>
    fromBinary(FileDescriptorProtoSchema, bytes),
  );
};

const symbol = (name: string) =>
  reflection.answer({ messageRequest: 'fileContainingSymbol', fileContainingSymbol: name });

describe('DescriptorReflection', () => {
  it('lists the services it was given, health included', () => {
    expect(reflection.answer({ messageRequest: 'listServices', listServices: '*' })).toEqual({
      listServicesResponse: {
        service: [{ name: 'grpc.health.v1.Health' }, { name: 'keel.agent.v1.AgentService' }],
      },
    });
  });

  it('answers a service with its own file and every file it imports, each once', () => {
    const files = filesOf(symbol('keel.agent.v1.AgentService'));
    expect(files.map((file) => file.name)).toEqual([
      'keel/agent/v1/agent.proto',
      'keel/conversations/v1/conversations.proto',
      'keel/events/v1/envelope.proto',
    ]);
    expect(files[0]?.dependency).toEqual([
      'keel/conversations/v1/conversations.proto',
      'keel/events/v1/envelope.proto',
    ]);
  });

  it('serves the fields as the .proto declares them: snake_case, json_name, fully qualified types, optional', () => {
    const [pricing] = filesOf(symbol('keel.pricing.v1.SetPriceRequest'));
    const fields = pricing?.messageType.find((message) => message.name === 'SetPriceRequest')?.field ?? [];
    expect(fields.find((field) => field.number === 2)).toMatchObject({
      name: 'input_usd_per_mtok',
      jsonName: 'inputUsdPerMtok',
    });
    expect(fields.find((field) => field.number === 9)).toMatchObject({
      name: 'actor',
      typeName: '.keel.events.v1.Actor',
    });
    expect(fields.find((field) => field.number === 4)).toMatchObject({
      name: 'cache_read_usd_per_mtok',
      proto3Optional: true,
    });
  });

  it("serves grpc-health-check's health.proto, its map entry as protoc makes it", () => {
    const [health] = filesOf(
      reflection.answer({ messageRequest: 'fileByFilename', fileByFilename: 'health/v1/health.proto' }),
    );
    expect(health?.package).toBe('grpc.health.v1');
    const list = health?.messageType.find((message) => message.name === 'HealthListResponse');
    expect(list?.nestedType.map((entry) => [entry.name, entry.options?.mapEntry])).toEqual([
      ['StatusesEntry', true],
    ]);
  });

  it('finds the file of a method, a field and an enum value', () => {
    for (const name of [
      'keel.agent.v1.AgentService.ListAgents',
      'keel.agent.v1.CallContext.tenant_id',
      'grpc.health.v1.HealthCheckResponse.ServingStatus.SERVING',
    ]) {
      expect(filesOf(symbol(name)).length, name).toBeGreaterThan(0);
    }
  });

  it('answers what it does not know with NOT_FOUND on the stream', () => {
    for (const answer of [
      symbol('keel.agent.v1.NoSuchThing'),
      reflection.answer({ messageRequest: 'fileByFilename', fileByFilename: 'no/such.proto' }),
      reflection.answer({
        messageRequest: 'fileContainingExtension',
        fileContainingExtension: { containingType: 'keel.agent.v1.CallContext', extensionNumber: 100 },
      }),
      reflection.answer({
        messageRequest: 'allExtensionNumbersOfType',
        allExtensionNumbersOfType: 'no.Such',
      }),
    ]) {
      expect(answer).toMatchObject({ errorResponse: { errorCode: status.NOT_FOUND } });
    }
    expect(
      reflection.answer({
        messageRequest: 'allExtensionNumbersOfType',
        allExtensionNumbersOfType: 'keel.agent.v1.CallContext',
      }),
    ).toEqual({
      allExtensionNumbersResponse: { baseTypeName: 'keel.agent.v1.CallContext', extensionNumber: [] },
    });
  });

  it('refuses to serve a service the descriptors do not have', () => {
    expect(() => new DescriptorReflection(['keel.agent.v1.Missing'])).toThrow(
      'keel.agent.v1.Missing not in @keel/proto/descriptors.binpb; run npm run proto:gen',
    );
  });
});
