package dev.pheby.protocol

import kotlinx.serialization.ExperimentalSerializationApi
import kotlinx.serialization.InternalSerializationApi
import kotlinx.serialization.KSerializer
import kotlinx.serialization.SerializationException
import kotlinx.serialization.builtins.serializer
import kotlinx.serialization.descriptors.PolymorphicKind
import kotlinx.serialization.descriptors.PrimitiveKind
import kotlinx.serialization.descriptors.PrimitiveSerialDescriptor
import kotlinx.serialization.descriptors.SerialDescriptor
import kotlinx.serialization.descriptors.SerialKind
import kotlinx.serialization.descriptors.buildSerialDescriptor
import kotlinx.serialization.encoding.Decoder
import kotlinx.serialization.encoding.Encoder
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonDecoder
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonEncoder
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.JsonUnquotedLiteral
import kotlin.reflect.KClass

// Forward compatibility: an app in the field must keep working against a newer server, which may send
// a message type or an enum value these models were generated without. Both decode to an explicit
// "unknown" case that keeps the raw JSON, so nothing fails and re-encoding is lossless.

/**
 * Base of every generated string set (`ErrorCode`, `ReasoningEffort`, …): a sealed class whose known
 * values are objects and whose `Unknown` case carries a value these models do not know.
 * Two values are equal when they are the same case with the same [value]; `toString()` is [value].
 */
abstract class OpenEnum(
    /** The JSON string, exactly as sent. */
    val value: String,
) {
    final override fun equals(other: Any?): Boolean =
        this === other || (other is OpenEnum && other.javaClass == javaClass && other.value == value)

    final override fun hashCode(): Int = value.hashCode()

    final override fun toString(): String = value
}

/** The companion of a generated string set: its known values, and the lookup used by decoding. */
abstract class OpenEnumValues<T : OpenEnum>(known: () -> List<T>, private val unknown: (String) -> T) {
    /** The known values, in schema order. (Lazy: the value objects extend the class this companion belongs to.) */
    val entries: List<T> by lazy(known)

    /** The known value spelled [value], else an `Unknown` carrying it. */
    fun of(value: String): T = entries.firstOrNull { it.value == value } ?: unknown(value)
}

/** Reads and writes an [OpenEnum] as its bare JSON string; [of] maps a string to its known case or `Unknown`. */
abstract class OpenEnumSerializer<T : OpenEnum>(serialName: String, private val of: (String) -> T) : KSerializer<T> {
    override val descriptor: SerialDescriptor = PrimitiveSerialDescriptor(serialName, PrimitiveKind.STRING)

    // decodeString rejects non-string JSON (a number, a boolean) unless the Json is lenient.
    override fun deserialize(decoder: Decoder): T = of(decoder.decodeString())

    override fun serialize(encoder: Encoder, value: T) = encoder.encodeString(value.value)
}

/**
 * [element] with every number marked to be written exactly as it was read: kotlinx re-encodes a
 * parsed number through Long or Double (`1.5e4` would come back as `15000.0`), which is not lossless.
 */
@OptIn(ExperimentalSerializationApi::class) // JsonUnquotedLiteral
private fun verbatim(element: JsonElement): JsonElement = when (element) {
    is JsonObject -> JsonObject(element.mapValues { verbatim(it.value) })
    is JsonArray -> JsonArray(element.map(::verbatim))
    is JsonNull -> element
    is JsonPrimitive -> if (element.isString) element else JsonUnquotedLiteral(element.content)
}

/**
 * The string at [key], or null when it is absent or not a JSON string (a number or `null` there is not
 * one): e.g. a raw frame's `request_id` or `conversation_id`, read before (or without) decoding it.
 */
fun JsonObject.stringOrNull(key: String): String? = (get(key) as? JsonPrimitive)?.takeIf { it.isString }?.content

/**
 * The serializer of a generated union (`ClientMessage`, `ServerMessage` on `type`; `PushPayload` on
 * `kind`): the object's [discriminator] selects one of [known] (each serializer's serial name is its
 * value); any other string value decodes to [unknown], which keeps the whole object. An object without
 * a string discriminator is an error. Encoding writes the discriminator first, then the class's fields,
 * as kotlinx's own sealed serializer does; an unknown one is written back exactly as it was read
 * ([unknownJson] returns its object).
 */
// buildSerialDescriptor and PolymorphicKind.SEALED describe the union exactly like kotlinx's own sealed serializer.
@OptIn(InternalSerializationApi::class, ExperimentalSerializationApi::class)
abstract class OpenUnionSerializer<T : Any>(
    serialName: String,
    known: List<Pair<KClass<out T>, KSerializer<out T>>>,
    private val unknown: (JsonObject) -> T,
    private val unknownJson: (T) -> JsonObject?,
    private val discriminator: String = "type",
) : KSerializer<T> {
    private val byType: Map<String, KSerializer<out T>> = known.associate { (_, serializer) -> serializer.descriptor.serialName to serializer }
    private val byClass: Map<KClass<out T>, KSerializer<out T>> = known.toMap()

    /** Every discriminator value (`type`, `kind`) these models know for this union. */
    val types: Set<String> get() = byType.keys

    override val descriptor: SerialDescriptor = buildSerialDescriptor(serialName, PolymorphicKind.SEALED) {
        element(discriminator, String.serializer().descriptor)
        element(
            "value",
            buildSerialDescriptor("$serialName.value", SerialKind.CONTEXTUAL) {
                known.forEach { (_, serializer) -> element(serializer.descriptor.serialName, serializer.descriptor) }
            },
        )
    }

    override fun deserialize(decoder: Decoder): T {
        val input = decoder as? JsonDecoder ?: throw SerializationException("${descriptor.serialName} is decoded from JSON only")
        val frame = input.decodeJsonElement() as? JsonObject ?: throw SerializationException("a ${descriptor.serialName.substringAfterLast('.')} must be a JSON object")
        val type = frame.stringOrNull(discriminator) ?: throw SerializationException("a ${descriptor.serialName.substringAfterLast('.')} needs a string $discriminator")
        val serializer = byType[type] ?: return unknown(frame)
        // The class has no discriminator property; drop it so decoding does not depend on ignoreUnknownKeys.
        return input.json.decodeFromJsonElement(serializer, JsonObject(frame - discriminator))
    }

    override fun serialize(encoder: Encoder, value: T) {
        val output = encoder as? JsonEncoder ?: throw SerializationException("${descriptor.serialName} is encoded to JSON only")
        unknownJson(value)?.let { return output.encodeJsonElement(verbatim(it)) }
        @Suppress("UNCHECKED_CAST") // byClass pairs each class with its own serializer
        val serializer = byClass[value::class] as? KSerializer<T>
            ?: throw SerializationException("${value::class} is not a ${descriptor.serialName}")
        val fields = output.json.encodeToJsonElement(serializer, value) as JsonObject
        output.encodeJsonElement(JsonObject(mapOf(discriminator to JsonPrimitive(serializer.descriptor.serialName)) + fields))
    }
}
