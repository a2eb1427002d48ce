console.log("pheby-server: the server lands with the @pheby/server core; see README");
