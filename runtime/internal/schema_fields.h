// The field checks of manifest.json, golden.json and capture.json, driven by their JSON Schemas
// (wrpkg/schemas, compiled in by //runtime:manifest_schemas): the schema is the one declaration of every
// field, and this walks it as wrpkg/schema_fields.py does, rule for rule and message for message.
//
// The keywords read: type, const, enum, properties, required, additionalProperties (false), items, minItems,
// minimum, $ref ("#/definitions/<name>") and format, whose names are the checks both readers share (relpath,
// sha256, size, cuda_driver). A node with a format is checked by it (a "null" in its type admits null; "type"
// beside it is for standard validators) and minimum, an integer a number must not be below (beside a format
// too, after it). Any other keyword is a fault of the schema (CheckSchemaReadable), so a schema cannot say
// what the readers do not check.
#pragma once

#include <optional>
#include <string>

#include "runtime/internal/json.h"

namespace wrp {

// What is wrong with one field: `field` as both readers name it ("modules[0].binary", "(top level)") and
// `what`, ending with the schema file ("expected string, got array (wrpkg/schemas/manifest.schema.json)").
struct FieldProblem {
  std::string field;
  std::string what;
};

// The first field of `value` that `schema` (the whole schema document; `schema_file` names it in messages)
// refuses, or nullopt. Properties are walked in key order, then unknown fields.
std::optional<FieldProblem> SchemaFieldProblem(const json::Value& value, const json::Value& schema,
                                               const std::string& schema_file);

// Throws wrp::Error naming `schema_file` when `schema` holds a keyword, format or $ref the walker does not
// read: a build fault (//runtime:manifest_test checks the compiled-in schemas).
void CheckSchemaReadable(const json::Value& schema, const std::string& schema_file);

// A plain relative path inside the bundle: not empty, no leading '/', no empty, '.' or '..' component, and a
// name by NameProblem (wrpkg.strict_json.is_safe_relpath).
bool IsPlainRelativePath(const std::string& path);

// "13.4": 1 to 3 digits, a dot, 1 or 2 digits (cuDriverGetVersion's 13040), as wrpkg's cuda_driver format.
bool IsCudaVersion(const std::string& text);

// A JSON value for a message, the same in both readers (wrpkg.schema_fields.shown_value): null, true, false,
// an integer's digits, a string quoted (Shown, its first 80 bytes), else its type name.
std::string ShownValue(const json::Value& value);

}  // namespace wrp
