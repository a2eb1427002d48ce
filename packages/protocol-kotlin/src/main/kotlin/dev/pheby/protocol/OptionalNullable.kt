package dev.pheby.protocol

import kotlinx.serialization.ExperimentalSerializationApi
import kotlinx.serialization.KSerializer
import kotlinx.serialization.Serializable
import kotlinx.serialization.descriptors.SerialDescriptor
import kotlinx.serialization.encoding.Decoder
import kotlinx.serialization.encoding.Encoder

/**
 * A field the protocol allows to be **absent** and, when present, **null** (e.g. `tool.event`'s
 * `duration_ms`: absent while running, `null` when the duration is unknown).
 *
 * kotlinx.serialization maps both "absent" and "null" to a plain `T? = null`, which would turn
 * `"duration_ms": null` into an absent field on re-encode. This type keeps them apart:
 * an absent key decodes to [Absent] (the property default, so it is omitted again on encode with
 * `encodeDefaults = false`), and a present key decodes to [Value], whose [Value.value] may be null.
 */
@Serializable(with = OptionalNullableSerializer::class)
sealed interface OptionalNullable<out T> {
    /** The key was not in the JSON object. */
    data object Absent : OptionalNullable<Nothing>

    /** The key was present; [value] is null when the JSON value was `null`. */
    data class Value<out T>(val value: T?) : OptionalNullable<T>

    /** The value, or null when absent or null. */
    val valueOrNull: T? get() = (this as? Value<T>)?.value
}

/** Encodes [OptionalNullable.Value] as its value or `null`; absence is handled by the property default. */
// decodeNotNullMark/decodeNull/encodeNull are marked experimental but are how JSON null is read and written.
@OptIn(ExperimentalSerializationApi::class)
class OptionalNullableSerializer<T>(private val valueSerializer: KSerializer<T>) : KSerializer<OptionalNullable<T>> {
    override val descriptor: SerialDescriptor = valueSerializer.descriptor

    override fun deserialize(decoder: Decoder): OptionalNullable<T> =
        if (decoder.decodeNotNullMark()) {
            OptionalNullable.Value(decoder.decodeSerializableValue(valueSerializer))
        } else {
            decoder.decodeNull()
            OptionalNullable.Value(null)
        }

    override fun serialize(encoder: Encoder, value: OptionalNullable<T>) {
        val present = value as? OptionalNullable.Value<T>
        // Absent is only reached with encodeDefaults = true; null is the closest JSON for it.
        if (present?.value == null) encoder.encodeNull() else encoder.encodeSerializableValue(valueSerializer, present.value)
    }
}
