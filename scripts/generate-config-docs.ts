// `pnpm docs:config`: writes docs/configuration.md from the config schema and its meanings.
import { writeFileSync } from 'node:fs';
import { renderConfigurationDoc } from '../packages/config/src/reference.js';

writeFileSync(new URL('../docs/configuration.md', import.meta.url), renderConfigurationDoc());
process.stderr.write('wrote docs/configuration.md\n');
