/**
 * Maps an ACP form elicitation (`elicitation/create`, mode `form`) to a Pheby
 * clarification, and the user's answer back to form content.
 *
 * Pheby asks one question with optional choices and optional free text, so the
 * form is read as: the first string field is the answer (its `enum`/`oneOf` are
 * the choices); free text is allowed when that field has no choices, or when a
 * choice named like "Other" is paired with a second string field (Hermes's
 * clarify form: `answer` enum + `other_answer`).
 */
import type { CreateElicitationResponse, ElicitationSchema } from "@agentclientprotocol/sdk";
import type { ClarifyAnswer, ClarifyQuestion } from "../port.js";

interface StringField {
  key: string;
  title?: string | null;
  description?: string | null;
  enum?: string[] | null;
  oneOf?: Array<{ const: string; title: string }> | null;
}

/** A form Pheby can present, with what it needs to build the answer. */
export interface ClarifyForm {
  question: ClarifyQuestion;
  /** Turn the user's answer into the form content the agent expects. */
  toResponse(answer: ClarifyAnswer): CreateElicitationResponse;
}

const OTHER = /\bother\b/i;

function stringFields(schema: ElicitationSchema): StringField[] {
  const props = schema.properties ?? {};
  const required = new Set(schema.required ?? []);
  const fields = Object.entries(props)
    .filter(([, p]) => p.type === "string")
    .map(([key, p]) => ({ key, ...(p as Omit<StringField, "key">) }));
  // Required fields first: they carry the question.
  return fields.sort((a, b) => Number(required.has(b.key)) - Number(required.has(a.key)));
}

/** Build a Pheby clarification from a form, or null when the form has no string field to answer. */
export function mapElicitationForm(message: string, schema: ElicitationSchema): ClarifyForm | null {
  const [main, second] = stringFields(schema);
  if (!main) return null;
  const values =
    main.oneOf?.map((o) => ({ value: o.const, label: o.title })) ??
    main.enum?.map((v) => ({ value: v, label: v })) ??
    [];
  const otherValue = values.find((v) => OTHER.test(v.label))?.value;
  const pairedOther = otherValue !== undefined && second !== undefined;
  const choices = values.filter((v) => !(pairedOther && v.value === otherValue));
  const allowFreeText = values.length === 0 || pairedOther;
  const question = [message, main.title].filter((s) => s?.trim()).filter((s, i, a) => a.indexOf(s) === i);
  return {
    question: {
      question: question.join("\n") || "The agent has a question.",
      choices: choices.length > 0 ? choices.map((c) => c.label) : null,
      allowFreeText,
    },
    toResponse(answer) {
      if (answer.outcome !== "answered") return { action: "cancel" };
      const picked = choices.find((c) => c.label === answer.response || c.value === answer.response);
      if (picked) return { action: "accept", content: { [main.key]: picked.value } };
      if (values.length === 0) return { action: "accept", content: { [main.key]: answer.response } };
      if (pairedOther && second && otherValue !== undefined) {
        return { action: "accept", content: { [main.key]: otherValue, [second.key]: answer.response } };
      }
      // The server only accepts offered choices when free text is off; decline rather than send junk.
      return { action: "decline" };
    },
  };
}
