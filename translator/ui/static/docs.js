// Swagger UI over this server's own document. validatorUrl null: Swagger UI's default sends the
// document's URL to validator.swagger.io for a badge, a request to another origin.
window.onload = function () {
  window.ui = SwaggerUIBundle({
    url: "/docs.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    layout: "BaseLayout",
  });
};
