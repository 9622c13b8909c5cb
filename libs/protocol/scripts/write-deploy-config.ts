// Writes deploy/nats/*.conf and deploy/k8s/nats-config.yaml from deploy/nats/tenants.json (`npm run deploy:config`).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { deployFiles, REPO_ROOT, readDeploymentSpec } from "./deploy-files.js";

const files = deployFiles(readDeploymentSpec());
for (const [path, text] of Object.entries(files)) writeFileSync(join(REPO_ROOT, path), text);
console.log(`wrote ${Object.keys(files).join(", ")}`);
