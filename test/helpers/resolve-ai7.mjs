// Preloaded with `node --import` (test/agents/ai-sdks.ts sets NODE_OPTIONS) in child processes
// that should run on AI SDK 7: `import "ai"` and `import "ai/…"` load the devDependency alias
// `ai7` instead, so an example runs on ai 7 unchanged. Children of that child inherit it.
import { register } from "node:module";

const hook = `
export async function resolve(specifier, context, next) {
  if (specifier !== "ai" && !specifier.startsWith("ai/")) return next(specifier, context);
  const mapped = "ai7" + specifier.slice(2);
  // Said on stderr, so a test can check that its child really ran on ai 7.
  process.stderr.write("resolve-ai7: " + specifier + " -> " + mapped + "\\n");
  return next(mapped, context);
}
`;
register(`data:text/javascript,${encodeURIComponent(hook)}`, import.meta.url);
