#!/usr/bin/env node
/** The `steplog` bin (dist/cli.js): everything it does is in program.ts. */

import { runBin } from "./program.js";

void runBin();
