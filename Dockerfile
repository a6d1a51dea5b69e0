# A Tributary node, on the current Node.js LTS (26). The code also runs on Node 20 (what
# the repository's lockfile, development and CI use); see "Containers" in docs/operating.md.
#
#   docker build --build-arg REVISION=$(git rev-parse --short=12 HEAD) -t tributary .
#   docker run -p 8888:8888 -p 8889:8889 -v tributary-data:/app/data tributary
#   docker run --rm tributary --version | status --url http://… | keygen --data-dir /app/data/node-1
ARG NODE_MAJOR=26

FROM node:${NODE_MAJOR}-bookworm AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The lockfile pins isolated-vm 5.0.4, the last line that builds on Node 20; it does not
# compile against the V8 of Node 24 and later. 7.0.1 has the same JavaScript API (its
# isolated-vm.d.ts is identical) and ships prebuilt binaries for Node 24 and 26 (the
# build stage has a toolchain anyway). Only the image switches: the lockfile is updated
# for isolated-vm alone, then installed as locked.
RUN if [ "$(node -p 'process.versions.node.split(".")[0]')" -ge 24 ]; then \
      npm pkg set dependencies.isolated-vm=7.0.1 && npm install --package-lock-only --no-audit --no-fund; \
    fi \
 && npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY src src
COPY proto proto
COPY config config
# Only src/ is compiled and shipped: no tests, benchmarks or dev scripts in the image.
RUN npx tsc -p tsconfig.json && npm prune --omit=dev

FROM node:${NODE_MAJOR}-bookworm-slim
ARG REVISION=unknown
WORKDIR /app
# Listen on every interface inside the container; publish the ports to choose who reaches
# them. Peers are told the container's own address (its first external IPv4) unless
# TRIBUTARY_ADVERTISE_ADDRESS says otherwise: set it to an address the other nodes can
# reach when they are not on the same container network (docs/operating.md, "Containers").
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
# Any command of the CLI: `start` (the default, see CMD), `status`, `keygen`, `health`, `--version`.
ENTRYPOINT ["node", "--no-node-snapshot", "--max-semi-space-size=64", "dist/src/main.js"]
CMD ["start"]
