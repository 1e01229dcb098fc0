// Preloaded with `node --import` (test/agents/ai-sdks.ts sets NODE_OPTIONS) in child processes
// that should run on AI SDK 7: `import "ai"` and `import "ai/…"` load the devDependency alias
// `ai7` instead, so an example runs on ai 7 unchanged. Children of that child inherit it.
// Each mapping is said on stderr, so a test can check that its child really ran on ai 7.
import module from "node:module";

const hook = `
export function resolve(specifier, context, next) {
  if (specifier !== "ai" && !specifier.startsWith("ai/")) return next(specifier, context);
  const mapped = "ai7" + specifier.slice(2);
  process.stderr.write("resolve-ai7: " + specifier + " -> " + mapped + "\\n");
  return next(mapped, context);
}
`;
const url = `data:text/javascript,${encodeURIComponent(hook)}`;

// In-thread hooks where Node has them (22.15+; module.register is deprecated from Node 26), else
// the hooks thread (Node 20).
if (typeof module.registerHooks === "function") module.registerHooks(await import(url));
else module.register(url, import.meta.url);
