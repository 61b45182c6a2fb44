// Small DOM helpers shared by the pipeline (maps.js) and the query inspector (inspector.js).
// MathML comes from fixed text in ui/widgets/formulas.py; learner text only ever goes in as textContent.
const MATH_NS = "http://www.w3.org/1998/Math/MathML";

function mathElement(body) {
  const doc = new DOMParser().parseFromString('<math xmlns="' + MATH_NS + '">' + body + "</math>", "application/xml");
  if (doc.getElementsByTagName("parsererror").length) return null;
  return document.importNode(doc.documentElement, true);
}

function text(tag, cls, value) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (value !== undefined && value !== null) e.textContent = value;
  return e;
}

