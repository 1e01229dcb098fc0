// The majors of the Vercel AI SDK the agents tests run on: `ai` (6.x) and the devDependency
// alias `ai7` (7.x). In-process tests load each by its module name; child processes (examples,
// crash tests) are pointed at ai 7 by AI_SDK_ENV, which preloads a resolve hook that maps the
// examples' own `import "ai"` onto `ai7`, so the examples stay as a user would write them.
import { fileURLToPath } from "node:url";

/** What the tests use of an SDK, typed with ai 6's types (the same calls exist in 7). */
export interface AiSdk {
  /** The module name: "ai" or "ai7". */
  name: string;
  major: number;
  ai: typeof import("ai");
  /** The SDK's `ai/test` module: MockLanguageModelV3 (6), and MockLanguageModelV4 too (7). */
  test: typeof import("ai/test") & { MockLanguageModelV4?: typeof import("ai/test").MockLanguageModelV3 };
}

export const AI_SDK_NAMES = ["ai", "ai7"] as const;

export async function loadAiSdk(name: string): Promise<AiSdk> {
  const ai = (await import(name)) as typeof import("ai");
  const test = (await import(`${name}/test`)) as AiSdk["test"];
  const pkg = (await import(`${name}/package.json`, { with: { type: "json" } })) as { default: { version: string } };
  return { name, major: Number(pkg.default.version.split(".")[0]), ai, test };
}

/** Every SDK, loaded (for describe.each at the top of a test file). */
export const loadAiSdks = () => Promise.all(AI_SDK_NAMES.map(loadAiSdk));

/**
 * The response messages of every step of a generateText or streamText result: `responseMessages`
 * in 7 (its `response.messages` holds the last step's only), `response.messages` in 6.
 */
export async function responseMessagesOf(sdk: AiSdk, result: { response: PromiseLike<{ messages: unknown }> | { messages: unknown } }): Promise<unknown> {
  if (sdk.major >= 7) return (result as unknown as { responseMessages: unknown }).responseMessages;
  return (await result.response).messages;
}

const RESOLVE_AI7 = fileURLToPath(new URL("../helpers/resolve-ai7.mjs", import.meta.url));

/** The environment that makes a child Node process load `ai7` where it imports `ai` (empty for "ai"). */
export function aiSdkEnv(name: string): Record<string, string> {
  if (name === "ai") return {};
  const options = [process.env.NODE_OPTIONS, `--import=${RESOLVE_AI7}`].filter(Boolean).join(" ");
  return { NODE_OPTIONS: options };
}
