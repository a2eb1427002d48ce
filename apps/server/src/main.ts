console.log("pheby-server: coming soon");
