// A TypeScript workflow: `steplog run` loads .ts files through tsx, no build step needed.
// It exports prepare(argv), so the words after `--` are turned into its args:
//
//   steplog run examples/cli/greet.ts --id greet-1 -- Ada Grace
//
// (In your own project, import from "steplog"; this example imports the repo's source so it
// type-checks before the package is built.)

import { defineWorkflow } from "../../src/entries/index.js";

interface Args {
  names: string[];
  shout: boolean;
}

export function prepare(argv: string[]): Args {
  return { names: argv.filter((a) => !a.startsWith("--")), shout: argv.includes("--shout") };
}

const greet = defineWorkflow({
  name: "greet",
  async run(ctx, args) {
    const { names, shout } = args as Args;
    const lines: string[] = [];
    for (const name of names) {
      // One step per name: keys greet, greet#2, greet#3, …
      lines.push(await ctx.step("greet", async (): Promise<string> => (shout ? `HELLO, ${name.toUpperCase()}!` : `Hello, ${name}.`)));
    }
    return ctx.step("join", async (info) => {
      info.usage({ outputTokens: lines.length * 5 });
      return lines.join(" ");
    });
  },
});

export default greet;
