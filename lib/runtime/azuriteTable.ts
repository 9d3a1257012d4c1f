import path from 'node:path';
import { installTableIndex } from './azuriteTableIndex';

/**
 * The Azurite table service as the local runtime starts it: Azurite's own entry point (its command line is
 * this process's), with the table store's index installed first (lib/runtime/azuriteTableIndex.ts).
 */
const azuriteRoot = path.dirname(require.resolve('azurite/package.json'));
installTableIndex(azuriteRoot);
 
require(path.join(azuriteRoot, 'dist/src/table/main.js'));
