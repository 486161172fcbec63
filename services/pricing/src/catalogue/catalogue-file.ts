import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Catalogue } from './catalogue.js';

/** The catalogue shipped with the code: services/pricing/catalogue/models.json (same path from src/ and dist/). */
export const SHIPPED_CATALOGUE_PATH = fileURLToPath(new URL('../../catalogue/models.json', import.meta.url));

/** Reads and checks a catalogue file; a missing or malformed file fails the service at start. */
export const loadCatalogueFile = (path: string = SHIPPED_CATALOGUE_PATH): Catalogue =>
  Catalogue.parse(JSON.parse(readFileSync(path, 'utf8')) as unknown);
