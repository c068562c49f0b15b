/**
 * Every property of a tool's JSON Schema, nested objects and array items included, by its dotted
 * path: what a model is shown, walked the same way for the tools and for the MCP server's listing.
 */
type Schema = Readonly<Record<string, unknown>>

function isSchema(value: unknown): value is Schema {
	return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** `[path, schema]` for every named property under `schema`, depth first. */
export function schemaProperties(schema: unknown, prefix = ''): Array<readonly [string, Schema]> {
	if (!isSchema(schema)) return []
	const found: Array<readonly [string, Schema]> = []
	const properties = isSchema(schema.properties) ? schema.properties : {}
	for (const [name, property] of Object.entries(properties)) {
		if (!isSchema(property)) continue
		const path = prefix === '' ? name : `${prefix}.${name}`
		found.push([path, property])
		found.push(...schemaProperties(property, path))
	}
	if (isSchema(schema.items)) found.push(...schemaProperties(schema.items, `${prefix}[]`))
	return found
}

/** Paths of the properties with no description a model could read (absent or blank). */
export function undescribedProperties(
	tools: ReadonlyArray<{ name: string; inputSchema: unknown }>,
) {
	return tools.flatMap((tool) =>
		schemaProperties(tool.inputSchema)
			.filter(
				([, schema]) =>
					typeof schema.description !== 'string' || schema.description.trim().length < 10,
			)
			.map(([path]) => `${tool.name}.${path}`),
	)
}
