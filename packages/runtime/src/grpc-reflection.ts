// gRPC server reflection (grpc.reflection.v1 and v1alpha) answered from the real descriptors:
// proto/gen/descriptors.binpb, the FileDescriptorSet `buf build` makes of keel/**/*.proto plus
// grpc.health.v1's health.proto (proto/scripts/generate.mjs; `proto:check` keeps it current).
// Each file goes out as buf built it: its own name and imports, fully qualified type names,
// snake_case field names with their json_name, proto3 `optional`, comments. @grpc/reflection
// serves proto-loader's reconstruction instead (one synthetic file per package, no imports,
// relative type names, camelCase fields), which grpcurl and protobuf-go reject on `describe`.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';
import type { DescFile, FileRegistry } from '@bufbuild/protobuf';
import { createFileRegistry, fromBinary, toBinary } from '@bufbuild/protobuf';
import { FileDescriptorProtoSchema, FileDescriptorSetSchema } from '@bufbuild/protobuf/wkt';
import type { Server, ServerDuplexStream, ServiceDefinition } from '@grpc/grpc-js';
import { loadPackageDefinition, status } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';

/** The reflection request as proto-loader decodes it (`oneofs: true` names the field that is set). */
interface ReflectionRequest {
  host?: string;
  messageRequest?: string;
  fileByFilename?: string;
  fileContainingSymbol?: string;
  fileContainingExtension?: { containingType?: string; extensionNumber?: number };
  allExtensionNumbersOfType?: string;
  listServices?: string;
}

type ReflectionAnswer =
  | { fileDescriptorResponse: { fileDescriptorProto: Uint8Array[] } }
  | { allExtensionNumbersResponse: { baseTypeName: string; extensionNumber: number[] } }
  | { listServicesResponse: { service: { name: string }[] } }
  | { errorResponse: { errorCode: number; errorMessage: string } };

class ReflectionNotFound extends Error {}

let descriptors: { registry: FileRegistry; encoded: Map<DescFile, Uint8Array> } | undefined;

/** The descriptor set, read and indexed once per process (the dev mode serves five servers). */
const loadDescriptors = (): NonNullable<typeof descriptors> => {
  if (descriptors) return descriptors;
  const path = createRequire(import.meta.url).resolve('@keel/proto/descriptors.binpb');
  const registry = createFileRegistry(fromBinary(FileDescriptorSetSchema, readFileSync(path)));
  const encoded = new Map<DescFile, Uint8Array>();
  for (const file of registry.files) encoded.set(file, toBinary(FileDescriptorProtoSchema, file.proto));
  descriptors = { registry, encoded };
  return descriptors;
};

/** The ServerReflection service of both reflection versions (grpcurl asks v1 first, older clients v1alpha). */
const reflectionServiceDefinitions = (): ServiceDefinition[] => {
  const protoDir = resolve(
    dirname(createRequire(import.meta.url).resolve('@grpc/reflection')),
    '../proto/grpc/reflection',
  );
  return (['v1', 'v1alpha'] as const).map((version) => {
    const definition = loadSync(resolve(protoDir, version, 'reflection.proto'), {
      keepCase: false,
      longs: Number,
      enums: String,
      defaults: true,
      oneofs: true,
    });
    const reflection = loadPackageDefinition(definition).grpc as unknown as Record<
      string,
      Record<string, { ServerReflection: { service: ServiceDefinition } }>
    >;
    return reflection.reflection![version]!.ServerReflection.service;
  });
};

/**
 * Answers gRPC reflection for `serviceNames` (listed by `list`) from the real descriptors.
 * Throws at start when a served service is missing from them (run `npm run proto:gen`).
 */
export class DescriptorReflection {
  private readonly registry: FileRegistry;
  private readonly encoded: Map<DescFile, Uint8Array>;

  constructor(private readonly serviceNames: readonly string[]) {
    ({ registry: this.registry, encoded: this.encoded } = loadDescriptors());
    const missing = serviceNames.filter((name) => this.registry.getService(name) === undefined);
    if (missing.length > 0) {
      throw new Error(
        `gRPC reflection: ${missing.join(', ')} not in @keel/proto/descriptors.binpb; run npm run proto:gen`,
      );
    }
  }

  /** Adds grpc.reflection.v1 and v1alpha ServerReflection to `server`. */
  addToServer(server: Server): void {
    for (const definition of reflectionServiceDefinitions()) {
      server.addService(definition, {
        ServerReflectionInfo: (stream: ServerDuplexStream<ReflectionRequest, unknown>) => {
          stream.on('data', (request: ReflectionRequest) => {
            stream.write({
              validHost: request.host ?? '',
              originalRequest: request,
              ...this.answer(request),
            });
          });
          stream.on('end', () => stream.end());
          stream.on('error', () => undefined);
        },
      });
    }
  }

  /** One reflection answer; what is not found is an error response on the stream, as the protocol says. */
  answer(request: ReflectionRequest): ReflectionAnswer {
    try {
      switch (request.messageRequest) {
        case 'listServices':
          return { listServicesResponse: { service: this.serviceNames.map((name) => ({ name })) } };
        case 'fileByFilename':
          return this.files(this.registry.getFile(request.fileByFilename ?? ''), request.fileByFilename);
        case 'fileContainingSymbol':
          return this.files(
            this.fileOfSymbol(request.fileContainingSymbol ?? ''),
            request.fileContainingSymbol,
          );
        case 'fileContainingExtension': {
          const { containingType = '', extensionNumber = 0 } = request.fileContainingExtension ?? {};
          const message = this.registry.getMessage(containingType);
          const extension = message && this.registry.getExtensionFor(message, extensionNumber);
          return this.files(extension?.file, `extension ${extensionNumber} of ${containingType}`);
        }
        case 'allExtensionNumbersOfType': {
          const typeName = request.allExtensionNumbersOfType ?? '';
          const message = this.registry.getMessage(typeName);
          if (!message) throw new ReflectionNotFound(`type not found: ${typeName}`);
          const numbers = [...this.registry.files]
            .flatMap((file) => allExtensions(file))
            .filter((extension) => extension.extendee.typeName === typeName)
            .map((extension) => extension.number);
          return { allExtensionNumbersResponse: { baseTypeName: typeName, extensionNumber: numbers } };
        }
        default:
          return {
            errorResponse: {
              errorCode: status.UNIMPLEMENTED,
              errorMessage: `unknown reflection request ${String(request.messageRequest)}`,
            },
          };
      }
    } catch (error) {
      if (!(error instanceof ReflectionNotFound)) throw error;
      return { errorResponse: { errorCode: status.NOT_FOUND, errorMessage: error.message } };
    }
  }

  /** The file declaring `symbol`: a type, service or extension, or a member of one (method, field, enum value). */
  private fileOfSymbol(symbol: string): DescFile | undefined {
    const found = this.registry.get(symbol);
    if (found) return found.file;
    const parentName = symbol.slice(0, symbol.lastIndexOf('.'));
    const member = symbol.slice(parentName.length + 1);
    const parent = this.registry.get(parentName);
    switch (parent?.kind) {
      case 'service':
        return parent.methods.some((method) => method.name === member) ? parent.file : undefined;
      case 'message':
        return parent.fields.some((field) => field.name === member) ||
          parent.oneofs.some((oneof) => oneof.name === member)
          ? parent.file
          : undefined;
      case 'enum':
        return parent.values.some((value) => value.name === member) ? parent.file : undefined;
      default:
        return undefined;
    }
  }

  /** `file` then every file it imports, transitively, each once. */
  private files(file: DescFile | undefined, asked: string | undefined): ReflectionAnswer {
    if (!file) throw new ReflectionNotFound(`not found: ${asked ?? ''}`);
    const ordered: DescFile[] = [];
    const visit = (next: DescFile): void => {
      if (ordered.includes(next)) return;
      ordered.push(next);
      next.dependencies.forEach(visit);
    };
    visit(file);
    return {
      fileDescriptorResponse: { fileDescriptorProto: ordered.map((each) => this.encoded.get(each)!) },
    };
  }
}

/** Every extension a file declares, nested ones included. */
const allExtensions = (file: DescFile) => {
  const nested = (messages: DescFile['messages']): DescFile['extensions'] =>
    messages.flatMap((message) => [...message.nestedExtensions, ...nested(message.nestedMessages)]);
  return [...file.extensions, ...nested(file.messages)];
};
