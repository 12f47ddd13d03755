// The part of JSON Schema that report.schema.json uses, enough to check a
// report against the schema itself (the format is written once, there).
// tests/test_class_page.py checks that the schema uses no other keyword,
// and checks the generated reports with Python's jsonschema as well.

export const KEYWORDS = [
  "$schema",
  "$defs",
  "$ref",
  "title",
  "description",
  "type",
  "const",
  "enum",
  "required",
  "properties",
  "additionalProperties",
  "items",
  "minItems",
  "maxItems",
  "minimum",
  "maximum",
  "minLength",
  "maxLength",
  "pattern",
];

function typeOf(v) {
  if (v === null) {
    return "null";
  }
  if (Array.isArray(v)) {
    return "array";
  }
  if (typeof v === "number") {
    return Number.isInteger(v) ? "integer" : "number";
  }
  return typeof v;
}

function fits(v, type) {
  const t = typeOf(v);
  return t === type || (type === "number" && t === "integer");
}

function at(path) {
  return path || "the report";
}

function short(v) {
  const s = JSON.stringify(v);
  return s === undefined ? String(v) : s.length > 40 ? s.slice(0, 37) + "..." : s;
}

// The first way `value` breaks `schema`, as one line naming where; null if
// it fits. `root` resolves "#/$defs/..." references.
export function check(schema, value, root = schema, path = "") {
  if (schema.$ref) {
    const name = schema.$ref.replace(/^#\/\$defs\//, "");
    return check(root.$defs[name], value, root, path);
  }
  // JSON has no infinity, but a number too large for a double (1e999) is
  // read as one: no report's number is, and every one is checked
  if (typeof value === "number" && !Number.isFinite(value)) {
    return at(path) + " is not a finite number (" + value + ": a number too large, such as 1e999)";
  }
  if (schema.type) {
    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    if (!types.some((t) => fits(value, t))) {
      return at(path) + " must be " + types.join(" or ") + ", not " + short(value);
    }
  }
  if ("const" in schema && value !== schema.const) {
    return at(path) + " must be " + short(schema.const);
  }
  if (schema.enum && !schema.enum.includes(value)) {
    return at(path) + " must be one of " + schema.enum.join(", ") + ", not " + short(value);
  }
  if (typeof value === "number") {
    if ("minimum" in schema && value < schema.minimum) {
      return at(path) + " must be at least " + schema.minimum;
    }
    if ("maximum" in schema && value > schema.maximum) {
      return at(path) + " must be at most " + schema.maximum;
    }
  }
  if (typeof value === "string") {
    if ("minLength" in schema && value.length < schema.minLength) {
      return at(path) + " is empty";
    }
    if ("maxLength" in schema && value.length > schema.maxLength) {
      return at(path) + " is longer than " + schema.maxLength + " characters";
    }
    if (schema.pattern && !new RegExp(schema.pattern).test(value)) {
      return at(path) + " is not of the form " + schema.pattern;
    }
  }
  if (Array.isArray(value)) {
    if ("minItems" in schema && value.length < schema.minItems) {
      return at(path) + " has fewer than " + schema.minItems + " items";
    }
    if ("maxItems" in schema && value.length > schema.maxItems) {
      return at(path) + " has more than " + schema.maxItems + " items";
    }
    if (schema.items) {
      for (let i = 0; i < value.length; i++) {
        const bad = check(schema.items, value[i], root, path + "[" + i + "]");
        if (bad) {
          return bad;
        }
      }
    }
  }
  if (typeOf(value) === "object") {
    for (const k of schema.required || []) {
      if (!(k in value)) {
        return at(path) + " has no " + k;
      }
    }
    const props = schema.properties || {};
    for (const k of Object.keys(value)) {
      if (k in props) {
        const bad = check(props[k], value[k], root, path ? path + "." + k : k);
        if (bad) {
          return bad;
        }
      } else if (schema.additionalProperties === false) {
        return at(path) + " has a field the format does not have: " + short(k);
      } else if (schema.additionalProperties && typeof schema.additionalProperties === "object") {
        const bad = check(schema.additionalProperties, value[k], root, path ? path + "." + k : k);
        if (bad) {
          return bad;
        }
      }
    }
  }
  return null;
}
