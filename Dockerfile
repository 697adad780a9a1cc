# The service image for the distributed stack (docker-compose.yml): one image, the role is chosen
# per container with `--role`. Node 20 on Debian, with what operator runs need: python3 for Python
# operators and python3-pip for their install steps (`python3 -m pip install --target .`,
# docs/writing-code.md; npm comes with the image), bubblewrap for the non-root sandbox, nftables
# for WORKER_NETWORK (as root; the container needs NET_ADMIN for it: docker-compose.yml), a
# compiler for the nodefork addon.
FROM node:20-bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-pip bubblewrap nftables build-essential ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
COPY ops/worker/native ops/worker/native
RUN npm ci --no-audit --no-fund
COPY . .
# The compiled service (dist/) and the console, built as npm start's prestart builds them, here
# rather than at every container start (npm ci above ran before the sources were copied).
RUN node ops/build/prestart.mjs
ENV HOST=0.0.0.0 PORT=8080 DATA_DIR=/data
EXPOSE 8080
# node itself, not `npm start`: npm hands SIGTERM to the `sh -c` it runs the script in, which dies
# without passing it on, so `docker stop` never reached the service and its bounded stop
# (SHUTDOWN_GRACE_SECONDS, README Operations: Stop). docker-compose.yml adds an init as PID 1.
# The same compiled JavaScript as npm start: no TypeScript loader in the image's start.
ENTRYPOINT ["node", "dist/main.js"]
CMD ["--role", "all"]
