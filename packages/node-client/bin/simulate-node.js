#!/usr/bin/env node
// The simulator, built to dist/ by `pnpm build`; this file exists before the build so that
// installing the package can link its command.
import '../dist/simulate-node.js';
