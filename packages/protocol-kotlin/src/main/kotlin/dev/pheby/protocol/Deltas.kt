package dev.pheby.protocol

// Pheby extension of v1 (docs/protocol.md, "Append deltas"): hand-written next to the generated models.
// Ask for [FEATURE_DELTA_APPEND] in [Hello.features]; when [Ready.features] contains it, deltas carry
// [MessageDelta.offset].

/**
 * The draft after this delta: `draft.substring(0, offset) + text`, or just [MessageDelta.text] for a v1
 * cumulative delta (no offset). Offsets count UTF-16 code units, like Kotlin strings, and never split a
 * surrogate pair. Throws [IllegalArgumentException] when the offset lies beyond [draft] (a delta was
 * missed: re-open the conversation, its `run.text` is the whole draft) or is negative (the models leave
 * `minimum 0` to the server, like every range).
 */
fun MessageDelta.applyTo(draft: String): String = applyDelta(draft, offset, text)

/**
 * The thought after this delta (the `thoughts` extension): `thought.substring(0, offset) + text`, with
 * exactly [MessageDelta.applyTo]'s rules (a thought delta always has an offset: 0 with the whole text on
 * a connection's first delta of the thought). Throws [IllegalArgumentException] when the offset lies
 * beyond [thought] (a delta was missed: re-open the conversation, its `thoughts` carry each thought so
 * far) or is negative.
 */
fun ThoughtDelta.applyTo(thought: String): String = applyDelta(thought, offset, text)

/** `draft.substring(0, offset) + text`; the whole [text] without an offset (a v1 cumulative delta). */
private fun applyDelta(draft: String, offset: Long?, text: String): String {
    val at = offset ?: return text
    require(at in 0..draft.length) { "delta offset $at is outside the draft (${draft.length} code units)" }
    return draft.substring(0, at.toInt()) + text
}
