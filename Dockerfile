# A Tributary node on Node.js 20, the runtime the repository's lockfile, development and CI
# use: the image installs the lockfile as committed (see "Containers" in docs/operating.md).
#
#   docker build --build-arg REVISION=$(git rev-parse --short=12 HEAD) -t tributary .
#   docker run -d -p 8888:8888 -p 8889:8889 -v tributary-data:/app/data -e TRIBUTARY_ADMIN_SECRET="$SECRET" tributary
#   docker run --rm tributary --version | status --url http://… | keygen --data-dir /app/data/node-1
#
# .ci/run checks this file's start command and variables without a container engine
# (scripts/image-check.ts): keep ENV, ENTRYPOINT, CMD and HEALTHCHECK in the forms it reads.
ARG NODE_MAJOR=20

FROM node:${NODE_MAJOR}-bookworm AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The lockfile as committed: isolated-vm 5.0.4 (the sandbox of tenant scripts) builds on
# Node 20, the combination every test runs on.
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.src.json ./
COPY src src
COPY proto proto
COPY config config
# Only src/ is compiled and shipped: no tests, benchmarks or dev scripts in the image.
RUN npx tsc -b tsconfig.src.json && npm prune --omit=dev --no-audit --no-fund

FROM node:${NODE_MAJOR}-bookworm-slim
ARG REVISION=unknown
WORKDIR /app
# Listen on every interface inside the container; publish the ports to choose who reaches
# them. A node beyond loopback refuses to start without an admin secret: give it with
# `-e TRIBUTARY_ADMIN_SECRET=…` (at least 16 characters; the same on every node). Peers are
# told the container's own address (its first external IPv4) unless
# TRIBUTARY_ADVERTISE_ADDRESS says otherwise: set it to an address the other nodes can reach
# when they are not on the same container network (docs/operating.md, "Containers").
ENV NODE_ENV=production \
    TRIBUTARY_REVISION=${REVISION} \
    TRIBUTARY_HOST=0.0.0.0
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules node_modules
COPY --from=build /app/dist/src dist/src
COPY --from=build /app/proto proto
COPY --from=build /app/config config
# The console's files (HTML, script, style) are served as they are from console/.
COPY console console
# The image's own user, not root; it owns the data folder (a volume).
RUN mkdir -p /app/data && chown node:node /app/data
USER node
VOLUME /app/data
EXPOSE 8888 8889
# The process is up (GET /health); `health --ready` would also ask that the node serves
# client requests (GET /ready), which a node waiting to be added does not: an orchestrator
# should use /ready for traffic, not to restart the container.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "--no-node-snapshot", "dist/src/main.js", "health"]
# Any command of the CLI: `start` (the default, see CMD), `status`, `keygen`, `health`, `version`.
ENTRYPOINT ["node", "--no-node-snapshot", "--max-semi-space-size=64", "--initial-old-space-size=256", "dist/src/main.js"]
CMD ["start"]
