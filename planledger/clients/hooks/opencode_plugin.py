"""`planledger hooks install opencode`: OpenCode has no command hooks, only JavaScript plugins
(`.opencode/plugins/*.js` in a project, `$XDG_CONFIG_HOME/opencode/plugins/` for the user). The
plugin written here is plain JavaScript on Node's built-ins (OpenCode runs it in its own
process): it runs `planledger hook opencode` once per `todowrite` call, with a time limit, and
never stops OpenCode's work when the ledger cannot be used."""

from __future__ import annotations

import json
import os
from pathlib import Path

FILE = "planledger.js"
TIMEOUT_MS = 8000

TEMPLATE = """\
// Written by `planledger hooks install opencode`: records OpenCode's todo lists in the plan
// ledger. Each todowrite list is decided before it runs (one `planledger hook opencode` call);
// a list the ledger refuses fails the call with the ledger's reasons, which the model reads.
// After a compaction the plan goes back to the model. If the ledger cannot be used (no
// answer within the time limit, an error), OpenCode goes on and nothing is claimed recorded.
import { spawn } from "node:child_process";

const COMMAND = __COMMAND__;
const TIMEOUT_MS = __TIMEOUT__;

function ask(event) {
  return new Promise((resolve) => {
    let out = "";
    let child;
    try {
      child = spawn(COMMAND[0], COMMAND.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
    } catch (error) {
      console.error(`planledger: cannot run ${COMMAND[0]}: ${error.message}`);
      resolve(null);
      return;
    }
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      console.error(`planledger: no answer within ${TIMEOUT_MS} ms; nothing recorded`);
      resolve(null);
    }, TIMEOUT_MS);
    child.stdout.on("data", (chunk) => (out += chunk));
    child.on("error", (error) => {
      clearTimeout(timer);
      console.error(`planledger: cannot run ${COMMAND[0]}: ${error.message}`);
      resolve(null);
    });
    child.on("close", () => {
      clearTimeout(timer);
      try {
        resolve(out.trim() ? JSON.parse(out) : {});
      } catch {
        resolve(null);
      }
    });
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify(event));
  });
}

// What OpenCode stores: every item with the string fields its todowrite requires. A list
// OpenCode refuses itself is not the ledger's to record.
function storable(todos) {
  return (
    Array.isArray(todos) &&
    todos.every(
      (todo) =>
        todo !== null &&
        typeof todo === "object" &&
        ["content", "status", "priority"].every((key) => typeof todo[key] === "string"),
    )
  );
}

export const PlanLedger = async ({ directory }) => {
  const compacting = new Map(); // session id -> the plan text, while a compaction runs
  const compacted = new Map(); // session id -> the plan text for its next system prompt
  return {
    event: async ({ event }) => {
      const session = event?.properties?.sessionID;
      if (event?.type !== "session.compacted" || !compacting.has(session)) return;
      compacted.set(session, compacting.get(session));
      compacting.delete(session);
    },
    "tool.execute.before": async (input, output) => {
      if (input.tool !== "todowrite" || !storable(output.args?.todos)) return;
      const answer = await ask({
        hook_event_name: "tool.execute.before",
        session_id: input.sessionID,
        call_id: input.callID,
        cwd: directory,
        tool_input: { todos: output.args.todos },
      });
      if (answer?.decision === "deny") throw new Error(answer.reason);
    },
    "experimental.session.compacting": async (input, output) => {
      const answer = await ask({
        hook_event_name: "experimental.session.compacting",
        session_id: input.sessionID,
        cwd: directory,
      });
      if (typeof answer?.context !== "string") return;
      output.context.push(answer.context);
      compacting.set(input.sessionID, answer.context);
    },
    "experimental.chat.system.transform": async (input, output) => {
      const text = input.sessionID && compacted.get(input.sessionID);
      if (!text) return;
      compacted.delete(input.sessionID);
      output.system.push(`The plan recorded before the context was compacted:\\n${text}`);
    },
  };
};
"""


def plugin_folder(project: Path | None, user: bool) -> Path:
    if user:
        config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
        return Path(config) / "opencode" / "plugins"
    return (project or Path.cwd()) / ".opencode" / "plugins"


def plugin_text(command: list[str]) -> str:
    return TEMPLATE.replace("__COMMAND__", json.dumps(command)).replace(
        "__TIMEOUT__", str(TIMEOUT_MS)
    )
