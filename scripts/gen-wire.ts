/** `npm run gen:wire`: rewrites the client's wire types from the zod contract (src/contract/agent-api.ts). */
import { writeFileSync } from "node:fs";
import { CLIENT_WIRE_TYPES_PATH, clientWireTypesSource } from "../src/contract/client-types.ts";

const target = new URL(`../${CLIENT_WIRE_TYPES_PATH}`, import.meta.url);
writeFileSync(target, clientWireTypesSource());
console.log(`wrote ${CLIENT_WIRE_TYPES_PATH}`);
