# One image for every Keel service; the container's command picks the service:
#   node services/<gateway|agent|tools|audit|pricing>/dist/main.js
# Stage 1 compiles TypeScript with the dev dependencies; stage 2 holds production dependencies
# only (npm ci --omit=dev), the compiled dist folders and the files read at run time, as a
# non-root user. The same steps run without Docker: npm ci, npm run build, node services/*/dist/main.js.
# The base image's Node major is the one package.json pins (devDependencies.node, engines); the
# .npmrc comes along for its install-script policy (package.json allowScripts, strictly).
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json .npmrc tsconfig.base.json tsconfig.build.json ./
COPY proto/package.json proto/
COPY packages/core/package.json packages/core/
COPY packages/events/package.json packages/events/
COPY packages/tooling/package.json packages/tooling/
COPY packages/runtime/package.json packages/runtime/
COPY packages/testkit/package.json packages/testkit/
COPY packages/console/package.json packages/console/
COPY services/gateway/package.json services/gateway/
COPY services/agent/package.json services/agent/
COPY services/tools/package.json services/tools/
COPY services/audit/package.json services/audit/
COPY services/pricing/package.json services/pricing/
# npm start's composition (apps/dev) is not in the image; its package.json keeps the lockfile whole.
COPY apps/dev/package.json apps/dev/
RUN npm ci --no-audit --no-fund
COPY proto proto
COPY packages packages
COPY services services
RUN npm run build

FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/package.json /app/package-lock.json /app/.npmrc ./
COPY --from=build /app/proto/package.json proto/
COPY --from=build /app/packages/core/package.json packages/core/
COPY --from=build /app/packages/events/package.json packages/events/
COPY --from=build /app/packages/tooling/package.json packages/tooling/
COPY --from=build /app/packages/runtime/package.json packages/runtime/
COPY --from=build /app/packages/testkit/package.json packages/testkit/
COPY --from=build /app/packages/console/package.json packages/console/
COPY --from=build /app/services/gateway/package.json services/gateway/
COPY --from=build /app/services/agent/package.json services/agent/
COPY --from=build /app/services/tools/package.json services/tools/
COPY --from=build /app/services/audit/package.json services/audit/
COPY --from=build /app/services/pricing/package.json services/pricing/
COPY --from=build /app/apps/dev/package.json apps/dev/
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/proto/dist proto/dist
COPY --from=build /app/proto/keel proto/keel
# The FileDescriptorSet gRPC reflection serves (packages/runtime/src/grpc-reflection.ts).
COPY --from=build /app/proto/gen/descriptors.binpb proto/gen/descriptors.binpb
COPY --from=build /app/packages/core/dist packages/core/dist
COPY --from=build /app/packages/events/dist packages/events/dist
COPY --from=build /app/packages/tooling/dist packages/tooling/dist
COPY --from=build /app/packages/runtime/dist packages/runtime/dist
COPY --from=build /app/services/gateway/dist services/gateway/dist
COPY --from=build /app/services/agent/dist services/agent/dist
COPY --from=build /app/services/tools/dist services/tools/dist
COPY --from=build /app/services/audit/dist services/audit/dist
COPY --from=build /app/services/pricing/dist services/pricing/dist
# The model price catalogue the pricing service loads at start.
COPY --from=build /app/services/pricing/catalogue services/pricing/catalogue
# The operator console the gateway serves at /console: the built files only (its libraries are
# bundled into them; packages/console has dev dependencies only).
COPY --from=build /app/packages/console/dist packages/console/dist
# The image's `node` user (uid 1000): nothing the service runs can write to /app.
USER node
ENV GRPC_HOST=0.0.0.0
EXPOSE 8080 50051 50052 50053 50054 50055
CMD ["node", "services/gateway/dist/main.js"]
