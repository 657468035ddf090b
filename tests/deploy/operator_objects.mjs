// Validates Prometheus Operator objects (a JSON list on stdin) with the operator's API validators
// from @kubernetes-models/prometheus-operator, installed by deploy/tools/install-operator-models.sh
// into the directory given as the first argument. Prints one JSON line: [{kind, name, error}],
// error null where the object is valid. Used by tests/deploy/test_monitoring.py.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const models = join(process.argv[2], "node_modules/@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/index.js");
const v1 = await import(pathToFileURL(models).href);
const objects = JSON.parse(readFileSync(0, "utf8"));
const results = objects.map((obj) => {
  const Kind = obj.apiVersion === "monitoring.coreos.com/v1" ? v1[obj.kind] : undefined;
  if (Kind === undefined) {
    return { kind: obj.kind, name: obj.metadata?.name, error: `no validator for ${obj.apiVersion} ${obj.kind}` };
  }
  try {
    new Kind(obj).validate();
    return { kind: obj.kind, name: obj.metadata?.name, error: null };
  } catch (exc) {
    return { kind: obj.kind, name: obj.metadata?.name, error: String(exc.message) };
  }
});
console.log(JSON.stringify(results));
