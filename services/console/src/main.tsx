// The console's entry: layout, navigation and the page for the current path.
import { type JSX, render } from "preact";
import { useState } from "preact/hooks";
import { gatewayBase, setGatewayBase, setToken, token } from "./api.js";
import { linkTo, usePath } from "./router.js";
import "./style.css";
import { AgentsPage } from "./views/agents-page.js";
import { ApprovalsPage } from "./views/approvals-page.js";
import { DiffPage } from "./views/diff-page.js";
import { HealthPage } from "./views/health-page.js";
import { SchedulesPage } from "./views/schedules-page.js";
import { SessionPage } from "./views/session-page.js";
import { SessionsPage } from "./views/sessions-page.js";
import { WebhooksPage } from "./views/webhooks-page.js";

function App() {
  const path = usePath();
  const session = /^\/sessions\/([^/]+)(\/runs(?:\/([^/]+))?)?\/?$/.exec(path);
  const diff = /^\/diff\/([^/]+)\/([^/]+)\/?$/.exec(path);
  let page: JSX.Element;
  if (path === "/" || path === "/sessions") page = <SessionsPage />;
  else if (session) {
    const id = decodeURIComponent(session[1] as string);
    const run = session[2] ? decodeURIComponent(session[3] ?? "") : undefined;
    page = <SessionPage key={id} sessionId={id} run={run} />;
  } else if (diff) {
    page = <DiffPage a={decodeURIComponent(diff[1] as string)} b={decodeURIComponent(diff[2] as string)} />;
  } else if (path === "/approvals") page = <ApprovalsPage />;
  else if (path === "/agents") page = <AgentsPage />;
  else if (path === "/health") page = <HealthPage />;
  else if (path === "/webhooks") page = <WebhooksPage />;
  else if (path === "/schedules") page = <SchedulesPage />;
  else page = <div class="notice">No page at {path}.</div>;
  return (
    <>
      <nav>
        <b>Fleet</b>
        {(
          [
            ["/", "Sessions"],
            ["/agents", "Agents"],
            ["/approvals", "Approvals"],
            ["/schedules", "Schedules"],
            ["/webhooks", "Webhooks"],
            ["/health", "Health"],
          ] as const
        ).map(([href, label]) => (
          <a key={href} href={href} onClick={linkTo(href)} class={path === href ? "on" : ""}>
            {label}
          </a>
        ))}
        <GatewayField />
        <TokenField />
      </nav>
      <main>{page}</main>
    </>
  );
}

/** The gateway to talk to: blank for the one that serves the console, else its URL (CORS). */
function GatewayField() {
  const [value, setValue] = useState(gatewayBase());
  return (
    <input
      class="gateway"
      data-testid="gateway-url"
      placeholder="gateway URL (blank: this site)"
      value={value}
      onChange={(e) => {
        const v = (e.target as HTMLInputElement).value.trim();
        setGatewayBase(v);
        setValue(gatewayBase());
      }}
    />
  );
}

function TokenField() {
  const [value, setValue] = useState(token() ?? "");
  return (
    <input
      class="token"
      type="password"
      placeholder="bearer token (if the gateway needs one)"
      value={value}
      onChange={(e) => {
        const v = (e.target as HTMLInputElement).value.trim();
        setValue(v);
        setToken(v);
      }}
    />
  );
}

render(<App />, document.getElementById("app") as HTMLElement);
