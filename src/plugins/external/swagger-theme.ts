/**
 * Swagger UI's extra style sheet: every long code block (the request body's example, the curl
 * command that repeats it, the documented and live response bodies) is shown in a box of a few
 * lines that scrolls, so that an operation's answer is one screen below its Execute button rather
 * than several thousand pixels (test/system/swagger.test.ts measures it).
 */
export const SWAGGER_CSS = `
.swagger-ui .curl-command pre,
.swagger-ui .request-snippets pre {
  max-height: 6.5em !important;
  overflow: auto !important;
}
.swagger-ui .body-param__text {
  max-height: 14em !important;
  min-height: 6em;
}
.swagger-ui .opblock-section-request-body .highlight-code pre,
.swagger-ui .model-example .highlight-code pre {
  max-height: 14em !important;
  overflow: auto !important;
}
.swagger-ui .live-responses-table .highlight-code pre {
  max-height: 24em !important;
  overflow: auto !important;
}
`;
