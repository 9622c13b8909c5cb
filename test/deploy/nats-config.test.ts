// deploy/nats/*.conf and deploy/k8s/nats-config.yaml are generated (`npm run deploy:config`): the
// committed files must match the generator, and nats-server must accept every server config.
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { passwordVars } from "@fleet/protocol";
import { describe, expect, it } from "vitest";
import { deployFiles, REPO_ROOT, readDeploymentSpec } from "../../libs/protocol/scripts/deploy-files.js";

const run = promisify(execFile);
const spec = readDeploymentSpec();

describe("deploy / generated NATS configuration", () => {
  it("matches the generator (run `npm run deploy:config` when this fails)", () => {
    for (const [path, text] of Object.entries(deployFiles(spec))) {
      expect(readFileSync(join(REPO_ROOT, path), "utf8"), path).toBe(text);
    }
  });

  it.each(["fleet.conf", "container.conf", "cluster-0.conf", "cluster-1.conf", "cluster-2.conf"])(
    "nats-server -t accepts %s",
    async (file) => {
      const env = { ...process.env, ...Object.fromEntries(passwordVars(spec).map((v) => [v, "test-password"])) };
      const { stdout, stderr } = await run("nats-server", ["-t", "-c", file], {
        cwd: join(REPO_ROOT, "deploy", "nats"),
        env,
      });
      expect(`${stdout}${stderr}`).toContain(`configuration file ${file} is valid`);
    },
  );

  it("nats-server refuses the accounts when a password variable is missing", async () => {
    const env = Object.fromEntries(
      passwordVars(spec)
        .slice(1)
        .map((v) => [v, "x"]),
    );
    const failed = await run("nats-server", ["-t", "-c", "fleet.conf"], {
      cwd: join(REPO_ROOT, "deploy", "nats"),
      env: { PATH: process.env.PATH ?? "", ...env },
    }).then(
      () => "",
      (err: { stderr: string }) => err.stderr,
    );
    expect(failed).toContain(`variable reference for '${passwordVars(spec)[0]}'`);
  });
});
