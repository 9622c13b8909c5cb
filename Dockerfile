# The Fleet services image: one image, one service per container, chosen by the command:
#   node services/loop/dist/main.js            (agent loop)
#   node services/tools/dist/main.js           (tool runner)
#   node services/session-store/dist/main.js   (session store)
#   node services/gateway/dist/main.js         (HTTP gateway and web console, port 8787)
#   node libs/client/bin/fleet.js <command>    (the fleet CLI, e.g. `audit-feed`, `doctor`)
# Build from the repository root: docker build -t fleet:latest .
# NODE_IMAGE: the Node 20 Debian base (scripts/image-test.sh builds one locally for podman).
ARG NODE_IMAGE=node:20-bookworm-slim
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY . .
RUN npm ci --no-audit --no-fund && npx tsc -b && npm run build -w @fleet/console && npm prune --omit=dev --no-audit --no-fund

FROM ${NODE_IMAGE}
# bash runs the `bash` tool; bubblewrap is its sandbox.
RUN apt-get update && apt-get install -y --no-install-recommends bash bubblewrap ca-certificates \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=build /app /app
RUN mkdir -p /workspace && chown node:node /workspace
USER node
ENV NODE_ENV=production FLEET_OPS_HOST=0.0.0.0 FLEET_OPS_PORT=9464
EXPOSE 9464 8787
CMD ["node", "services/loop/dist/main.js"]
