package dev.pheby.client

import java.io.IOException
import java.io.InputStream
import java.io.OutputStream
import java.net.InetAddress
import java.net.ServerSocket
import java.net.Socket
import java.util.concurrent.CopyOnWriteArrayList
import kotlin.concurrent.thread

/**
 * A TCP proxy on 127.0.0.1 in front of a server's port, which a test can cut like a phone losing its
 * network: [cut] breaks the connections through it (the client sees a dead socket, close code 1006),
 * [pause] also refuses new ones until [resume], and [swallowReplies] lets the client's frames reach the
 * server while dropping everything the server answers (a reply lost in the drop). Real sockets both ways.
 */
class TcpProxy(private val upstreamPort: () -> Int) : AutoCloseable {
    private val loopback = InetAddress.getByName("127.0.0.1")
    private val listener = ServerSocket(0, 50, loopback)
    private val open = CopyOnWriteArrayList<Socket>()

    @Volatile private var refusing = false

    @Volatile private var swallowing = false

    /** The proxy's port: the client connects here. */
    val port: Int = listener.localPort

    /** The WebSocket URL through the proxy. */
    val url: String = "ws://127.0.0.1:$port/ws"

    init {
        thread(isDaemon = true, name = "tcp-proxy") {
            while (!listener.isClosed) {
                val client = try {
                    listener.accept()
                } catch (e: IOException) {
                    break
                }
                if (refusing) {
                    client.close()
                    continue
                }
                val upstream = try {
                    Socket(loopback, upstreamPort())
                } catch (e: IOException) {
                    client.close() // the server is down (restarting): as a refused connection
                    continue
                }
                open += client
                open += upstream
                pump(client.getInputStream(), upstream.getOutputStream(), toClient = false, client, upstream)
                pump(upstream.getInputStream(), client.getOutputStream(), toClient = true, client, upstream)
            }
        }
    }

    private fun pump(from: InputStream, to: OutputStream, toClient: Boolean, vararg ends: Socket) = thread(isDaemon = true, name = "tcp-proxy-pump") {
        val buffer = ByteArray(16 * 1024)
        try {
            while (true) {
                val n = from.read(buffer)
                if (n < 0) break
                if (toClient && swallowing) continue
                to.write(buffer, 0, n)
                to.flush()
            }
        } catch (e: IOException) {
            // cut, or the other end closed
        } finally {
            ends.forEach { runCatching { it.close() } }
        }
    }

    /** Breaks every connection through the proxy now (no close frame: the client sees a dead connection). */
    fun cut() {
        for (socket in open) runCatching { socket.close() }
        open.clear()
        swallowing = false
    }

    /** [cut], and refuse new connections until [resume]. */
    fun pause() {
        refusing = true
        cut()
    }

    /** Accept connections again. */
    fun resume() {
        refusing = false
    }

    /** From now until the next [cut], drop what the server sends (the client's frames still arrive). */
    fun swallowReplies() {
        swallowing = true
    }

    override fun close() {
        listener.close()
        cut()
    }
}
