// The world the example agents act on, kept in files so that it outlives a killed process:
//
//   orders        a read-only lookup                          (effect "read")
//   drafts.json   reply drafts, upserted by idempotency key   (effect "idempotent")
//   outbox.jsonl  emails sent; an email cannot be unsent      (effect "irreversible")
//
// and two ledgers that the example (and its test) read afterwards to count what really ran,
// across processes: model-calls.jsonl (every time a model was asked) and tool-calls.jsonl
// (every time a tool's function ran). Nothing leaves your machine.

import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";

const ORDERS = {
  "o-17": { orderId: "o-17", customer: "Ada Lovelace", email: "ada@example.com", status: "shipped", eta: "tomorrow" },
};

/** Where the example's store is: <STEPLOG_AGENT_DIR>/steplog.db, or the default store under the working directory. */
export function storePath() {
  const dir = process.env.STEPLOG_AGENT_DIR;
  return dir ? path.join(dir, "steplog.db") : path.join(".steplog", "steplog.db");
}

/** One line, written synchronously: a line printed just before a SIGKILL must not sit in a buffer. */
export function say(line) {
  try {
    fs.writeSync(1, `${line}\n`);
  } catch {
    process.stdout.write(`${line}\n`);
  }
}

function appendLine(file, entry) {
  fs.appendFileSync(file, `${JSON.stringify({ ...entry, pid: process.pid })}\n`);
}

function readLines(file) {
  return fs.existsSync(file)
    ? fs
        .readFileSync(file, "utf8")
        .split("\n")
        .filter(Boolean)
        .map((line) => JSON.parse(line))
    : [];
}

/** The world in `dir`. `hooks.beforeOutcome(tool)` runs right after an effect landed (the example's crash). */
export function openWorld(dir, hooks = {}) {
  fs.mkdirSync(dir, { recursive: true });
  const file = (name) => path.join(dir, name);
  const toolCall = (tool, options) => appendLine(file("tool-calls.jsonl"), { tool, key: options?.idempotencyKey ?? null, redrive: Boolean(options?.previous) });

  return {
    dir,

    /** Read: an order by id. */
    lookupOrder({ orderId }, options) {
      toolCall("lookupOrder", options);
      const order = ORDERS[orderId];
      if (!order) throw new Error(`no order ${orderId}`);
      return order;
    },

    /** Idempotent: the same key saves over the same draft, so a repeat changes nothing. */
    saveDraft({ to, subject, body }, options) {
      toolCall("saveDraft", options);
      const drafts = fs.existsSync(file("drafts.json")) ? JSON.parse(fs.readFileSync(file("drafts.json"), "utf8")) : {};
      const draftId = `d-${crypto.createHash("sha256").update(options.idempotencyKey).digest("hex").slice(0, 6)}`;
      drafts[draftId] = { to, subject, body, key: options.idempotencyKey };
      fs.writeFileSync(file("drafts.json"), JSON.stringify(drafts, null, 2));
      return { draftId };
    },

    /** Irreversible: an email, once sent, is sent. The provider records the key we send with it. */
    sendEmail({ draftId }, options) {
      toolCall("sendEmail", options);
      const drafts = JSON.parse(fs.readFileSync(file("drafts.json"), "utf8"));
      const draft = drafts[draftId];
      if (!draft) throw new Error(`no draft ${draftId}`);
      const messageId = `m-${readLines(file("outbox.jsonl")).length + 1}`;
      appendLine(file("outbox.jsonl"), { messageId, to: draft.to, subject: draft.subject, key: options.idempotencyKey });
      hooks.beforeOutcome?.("sendEmail", { messageId, to: draft.to });
      return { messageId, to: draft.to };
    },

    /** The mail provider's lookup by the key we sent: what a `query` asks. */
    findSent(idempotencyKey) {
      const sent = readLines(file("outbox.jsonl")).find((m) => m.key === idempotencyKey);
      return sent ? { messageId: sent.messageId, to: sent.to } : undefined;
    },

    recordModelCall(entry) {
      appendLine(file("model-calls.jsonl"), entry);
    },

    outbox: () => readLines(file("outbox.jsonl")),
    modelCalls: () => readLines(file("model-calls.jsonl")),
    toolCalls: () => readLines(file("tool-calls.jsonl")),
  };
}

/**
 * The scripted "model" both agents use: what it answers depends only on the conversation so far
 * (how many tool results it holds), like a real model at temperature 0, except that each answer
 * gets fresh random tool-call ids, as real models give. So a model asked again would name its
 * calls differently: only a recorded turn gives a continue the same ids.
 */
export function scriptedAnswer(ticket, toolResults) {
  const id = () => `call_${crypto.randomBytes(4).toString("hex")}`;
  const [order, draft, sent] = toolResults;
  switch (toolResults.length) {
    case 0:
      return {
        text: `Plan: 1) look up the order in "${ticket}", 2) save a reply draft, 3) email the customer.`,
        calls: [{ id: id(), name: "lookupOrder", input: { orderId: "o-17" } }],
      };
    case 1:
      return {
        text: "",
        calls: [
          {
            id: id(),
            name: "saveDraft",
            input: {
              to: order.email,
              subject: `Your order ${order.orderId}`,
              body: `Hello ${order.customer}, your order has ${order.status} and arrives ${order.eta}.`,
            },
          },
        ],
      };
    case 2:
      return { text: "", calls: [{ id: id(), name: "sendEmail", input: { draftId: draft.draftId } }] };
    default:
      return { text: `Emailed ${sent.to} (message ${sent.messageId}): order o-17 arrives tomorrow.`, calls: [] };
  }
}

/** Rough token counts for the scripted model: about four characters a token. */
export function tokens(text) {
  return Math.max(1, Math.ceil(text.length / 4));
}

/** What this pretend model costs: $2 per million input tokens, $8 per million output tokens. */
export const costUsd = ({ inputTokens = 0, outputTokens = 0 }) => (inputTokens * 2 + outputTokens * 8) / 1e6;
