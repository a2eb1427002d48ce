package dev.pheby.protocol

import kotlinx.serialization.KSerializer
import kotlinx.serialization.Serializable
import kotlinx.serialization.SerializationException
import kotlinx.serialization.descriptors.PrimitiveKind
import kotlinx.serialization.descriptors.PrimitiveSerialDescriptor
import kotlinx.serialization.descriptors.SerialDescriptor
import kotlinx.serialization.encoding.Decoder
import kotlinx.serialization.encoding.Encoder
import kotlinx.serialization.json.JsonDecoder
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.booleanOrNull
import kotlinx.serialization.json.doubleOrNull
import kotlinx.serialization.json.longOrNull

// kotlinx.serialization's Json reads quoted primitives ("true", "5") into Boolean and Long fields even
// with isLenient = false. The protocol does not: `"enabled": "true"` is a bad_request. These aliases
// are plain Boolean / Long to callers but decode only unquoted JSON booleans and integers.

/** A `Boolean` that decodes only from a JSON `true`/`false`, never from a string. */
typealias StrictBoolean = @Serializable(with = StrictBooleanSerializer::class) Boolean

/** A `Long` that decodes only from a JSON integer, never from a string or a fraction. */
typealias StrictLong = @Serializable(with = StrictLongSerializer::class) Long

/** A `Double` that decodes only from a JSON number, never from a string. */
typealias StrictDouble = @Serializable(with = StrictDoubleSerializer::class) Double

private fun Decoder.unquotedPrimitive(kind: String): JsonPrimitive? {
    val json = this as? JsonDecoder ?: return null
    val element = json.decodeJsonElement()
    if (element !is JsonPrimitive || element.isString) throw SerializationException("expected a JSON $kind, got $element")
    return element
}

/** Serializer behind [StrictBoolean]. */
object StrictBooleanSerializer : KSerializer<Boolean> {
    override val descriptor: SerialDescriptor = PrimitiveSerialDescriptor("dev.pheby.protocol.StrictBoolean", PrimitiveKind.BOOLEAN)

    override fun deserialize(decoder: Decoder): Boolean {
        val primitive = decoder.unquotedPrimitive("boolean") ?: return decoder.decodeBoolean()
        return primitive.booleanOrNull ?: throw SerializationException("expected a JSON boolean, got $primitive")
    }

    override fun serialize(encoder: Encoder, value: Boolean) = encoder.encodeBoolean(value)
}

/** Serializer behind [StrictLong]. */
object StrictLongSerializer : KSerializer<Long> {
    override val descriptor: SerialDescriptor = PrimitiveSerialDescriptor("dev.pheby.protocol.StrictLong", PrimitiveKind.LONG)

    override fun deserialize(decoder: Decoder): Long {
        val primitive = decoder.unquotedPrimitive("integer") ?: return decoder.decodeLong()
        return primitive.longOrNull ?: throw SerializationException("expected a JSON integer, got $primitive")
    }

    override fun serialize(encoder: Encoder, value: Long) = encoder.encodeLong(value)
}

/** Serializer behind [StrictDouble]. */
object StrictDoubleSerializer : KSerializer<Double> {
    override val descriptor: SerialDescriptor = PrimitiveSerialDescriptor("dev.pheby.protocol.StrictDouble", PrimitiveKind.DOUBLE)

    override fun deserialize(decoder: Decoder): Double {
        val primitive = decoder.unquotedPrimitive("number") ?: return decoder.decodeDouble()
        return primitive.doubleOrNull ?: throw SerializationException("expected a JSON number, got $primitive")
    }

    override fun serialize(encoder: Encoder, value: Double) = encoder.encodeDouble(value)
}
