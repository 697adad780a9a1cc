/* global window, document, SwaggerUIBundle, SwaggerUIStandalonePreset */
// Starts the viewer of /api/v1/docs. A file of its own: the page's Content-Security-Policy runs no
// inline script. The document's URL comes from the page (data-url), never from the address bar.
window.addEventListener('load', function start() {
  const root = document.getElementById('swagger-ui');
  window.ui = SwaggerUIBundle({
    url: root.dataset.url,
    dom_id: '#swagger-ui',
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    plugins: [SwaggerUIBundle.plugins.DownloadUrl],
    layout: 'StandaloneLayout',
    // No badge fetched from the public validator, no configuration taken from the query string,
    // and a token typed into "Authorize" is not kept in the browser's storage.
    validatorUrl: null,
    queryConfigEnabled: false,
    persistAuthorization: false,
  });
});
