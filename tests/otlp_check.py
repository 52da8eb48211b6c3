"""Validates an OTLP/HTTP JSON payload against the official opentelemetry-proto definitions.

Reads the payload on stdin; prints a JSON summary of the parsed request on stdout.
With `--registry FILE` (tests/fixtures/genai-registry.yaml: semantic-convention definitions),
also checks every span attribute of a namespace the file defines (`gen_ai.*`, `server.*`,
`error.*`): its key must be defined there (no invented `gen_ai.*` names) and its value of the
defined type (string, int, double, boolean, string[]; an enum is a string, its well-known
values listed in the summary's `custom` when a value is not one of them).
OTLP/JSON writes trace and span ids as hex (not the base64 of protobuf's standard JSON
mapping: https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding), so they are
converted first, exactly as an OTLP receiver does; everything else must parse as is, with
unknown fields rejected.
"""
import base64
import json
import sys

import yaml

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

ID_FIELDS = ("traceId", "spanId", "parentSpanId")


def hex_ids_to_base64(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ID_FIELDS and isinstance(value, str):
                node[key] = base64.b64encode(bytes.fromhex(value)).decode()
            else:
                hex_ids_to_base64(value)
    elif isinstance(node, list):
        for item in node:
            hex_ids_to_base64(item)


# Registry types → the AnyValue field an attribute of that type is sent in.
TYPES = {"string": "string_value", "int": "int_value", "double": "double_value", "boolean": "bool_value", "string[]": "array_value"}


def check_registry(path, req):
    """Errors (a list of strings) and non-member enum values ({key: [values]}) of the payload's
    span attributes against the registry file."""
    with open(path, encoding="utf-8") as f:
        reg = {a["key"]: a for a in yaml.safe_load(f)["attributes"]}
    spaces = {k.split(".")[0] + "." for k in reg}
    errors, custom = [], {}
    for rs in req.resource_spans:
        for ss in rs.scope_spans:
            for s in ss.spans:
                for a in s.attributes:
                    if not any(a.key.startswith(p) for p in spaces):
                        continue
                    d = reg.get(a.key)
                    if d is None:
                        errors.append(f"{s.name}: {a.key} is not defined by the conventions")
                        continue
                    ty = d["type"]
                    members = [m["value"] for m in ty["members"]] if isinstance(ty, dict) else None
                    want = "string_value" if members is not None else TYPES[ty]
                    got = a.value.WhichOneof("value")
                    if got != want:
                        errors.append(f"{s.name}: {a.key} is a {got}, the conventions say {ty if members is None else 'string (enum)'}")
                    elif ty == "string[]" and any(v.WhichOneof("value") != "string_value" for v in a.value.array_value.values):
                        errors.append(f"{s.name}: {a.key} holds a non-string")
                    elif members is not None and a.value.string_value not in members:
                        custom.setdefault(a.key, set()).add(a.value.string_value)
    return errors, {k: sorted(v) for k, v in custom.items()}


def main():
    doc = json.load(sys.stdin)
    hex_ids_to_base64(doc)
    req = json_format.Parse(json.dumps(doc), ExportTraceServiceRequest(), ignore_unknown_fields=False)
    spans = []
    for rs in req.resource_spans:
        resource = {a.key: json_format.MessageToDict(a.value) for a in rs.resource.attributes}
        for ss in rs.scope_spans:
            for s in ss.spans:
                spans.append(
                    {
                        "name": s.name,
                        "traceId": s.trace_id.hex(),
                        "spanId": s.span_id.hex(),
                        "parentSpanId": s.parent_span_id.hex(),
                        "kind": s.kind,
                        "start": str(s.start_time_unix_nano),
                        "end": str(s.end_time_unix_nano),
                        "events": [e.name for e in s.events],
                        "attributes": {a.key: json_format.MessageToDict(a.value) for a in s.attributes},
                        "status": s.status.code,
                    }
                )
    out = {"resource": resource, "scope": rs.scope_spans[0].scope.name, "spans": spans}
    if "--registry" in sys.argv:
        errors, custom = check_registry(sys.argv[sys.argv.index("--registry") + 1], req)
        if errors:
            sys.exit("not as the semantic conventions define:\n" + "\n".join(errors))
        out["custom"] = custom
    print(json.dumps(out))


if __name__ == "__main__":
    main()
