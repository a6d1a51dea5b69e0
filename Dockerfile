# A Tributary node. isolated-vm compiles on install, so the build stage has a toolchain.
FROM node:20-bookworm AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY src src
COPY proto proto
COPY config config
COPY bench bench
COPY scripts scripts
COPY test test
RUN npm run build && npm prune --omit=dev

FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules node_modules
COPY --from=build /app/dist dist
COPY --from=build /app/proto proto
COPY --from=build /app/config config
COPY console console
VOLUME /app/data
EXPOSE 8888 8889
# Listen on every interface inside the container; publish the ports to choose who reaches them.
ENTRYPOINT ["node", "--no-node-snapshot", "dist/src/main.js", "start", "--host", "0.0.0.0"]
