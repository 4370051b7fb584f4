// Generates `schema/plan-v1.d.ts` from `schema/plan-v1.schema.json` with json-schema-to-typescript.
//   node scripts/types.mjs --write   writes it (npm run generate)
//   node scripts/types.mjs --check   fails when the committed file differs (npm run check)
import { readFile, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { compile } from "json-schema-to-typescript";

const schemaPath = fileURLToPath(new URL("../../../schema/plan-v1.schema.json", import.meta.url));
const typesPath = fileURLToPath(new URL("../../../schema/plan-v1.d.ts", import.meta.url));

const schema = JSON.parse(await readFile(schemaPath, "utf8"));
const types = await compile(schema, "ExecutionPlan", {
  bannerComment:
    "/* Generated from schema/plan-v1.schema.json by examples/typescript (npm run generate); do not edit.\n" +
    " * The schema states the plan's shape; planlock also checks the rules its description lists. */",
  additionalProperties: false,
  strictIndexSignatures: true,
  ignoreMinAndMaxItems: true,
  format: true,
});

const mode = process.argv[2];
if (mode === "--write") {
  await writeFile(typesPath, types);
  console.log(`wrote ${typesPath}`);
} else if (mode === "--check") {
  const committed = await readFile(typesPath, "utf8").catch(() => "");
  if (committed !== types) {
    console.error(`${typesPath} is not what the schema generates; run \`npm run generate\` in examples/typescript`);
    process.exit(1);
  }
  console.log(`${typesPath} matches the schema`);
} else {
  console.error("usage: node scripts/types.mjs --write | --check");
  process.exit(2);
}
