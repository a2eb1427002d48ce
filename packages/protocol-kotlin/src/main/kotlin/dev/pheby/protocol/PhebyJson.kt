package dev.pheby.protocol

import kotlinx.serialization.json.Json

/**
 * The `Json` configuration that decodes every Pheby Protocol v1 frame and re-encodes it exactly.
 *
 * - `classDiscriminator = "type"`: kotlinx's default, spelled out. [ClientMessage] and [ServerMessage]
 *   read and write `type` themselves ([OpenUnionSerializer]), so an unknown type decodes to `Unknown`.
 * - `ignoreUnknownKeys = true`: the protocol lets peers add fields; they are dropped on decode.
 * - `explicitNulls = true`: a required-nullable property (`val run: RunState?`, no default) is always
 *   encoded, as `null` when null, and must be present on decode, exactly like the schema's `required`.
 * - `encodeDefaults = false`: optional properties (`val x: T? = null`, [OptionalNullable.Absent])
 *   are omitted while they hold their default, so "absent" stays absent.
 */
val PhebyJson: Json = Json {
    classDiscriminator = "type"
    ignoreUnknownKeys = true
    explicitNulls = true
    encodeDefaults = false
}

/** Decodes one client-to-server frame (a server or test would use this). */
fun decodeClientMessage(text: String): ClientMessage = PhebyJson.decodeFromString(ClientMessage.serializer(), text)

/**
 * Decodes one server-to-client frame. A type or string value from a newer server decodes to an `Unknown`
 * case; a malformed frame throws `SerializationException` (an `IllegalArgumentException`).
 */
fun decodeServerMessage(text: String): ServerMessage = PhebyJson.decodeFromString(ServerMessage.serializer(), text)

/**
 * Decodes the JSON object of a Web Push message (the `push` extension), once decrypted. A `kind` from a
 * newer server decodes to [PushPayload.Unknown]; a malformed payload throws `SerializationException`.
 */
fun decodePushPayload(text: String): PushPayload = PhebyJson.decodeFromString(PushPayload.serializer(), text)

/**
 * Encodes a frame with its `type`. Always encode through the sealed serializer: encoding a concrete
 * class (`PhebyJson.encodeToString(ChatSend(...))`) would leave out the `type` discriminator.
 */
fun ClientMessage.toJson(): String = PhebyJson.encodeToString(ClientMessage.serializer(), this)

/** Encodes a server frame with its `type`. */
fun ServerMessage.toJson(): String = PhebyJson.encodeToString(ServerMessage.serializer(), this)
