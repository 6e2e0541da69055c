import { AppError } from '@agent-backend/http-server';
import { SkillList, UploadSkillRequest, UploadSkillResponse } from '@agent-backend/protocol';
import type { ServiceContext } from '@agent-backend/runtime';
import { parseSkillUpload, TooManySkillsError, type SkillCatalog } from '@agent-backend/skills';

/** Largest upload body: a 2 MiB zip in base64, with room for the JSON around it. */
export const SKILL_UPLOAD_BODY_LIMIT = 3 * 1024 * 1024;

/**
 * The caller's skills catalog (docs/skills.md): `GET /api/skills` lists the shipped,
 * operator and the caller's own skills (theirs shadow shared ones of the same name, for them
 * only); `POST /api/skills` adds or replaces one of the caller's (a SKILL.md text or a zip of the
 * folder, every problem reported as a 400 field error); `DELETE /api/skills/:name` removes one of
 * the caller's (404 for a shared or another user's skill).
 */
export function registerSkillRoutes(
  { app, requireUser, limits }: ServiceContext,
  skills: Promise<SkillCatalog>,
): void {
  app.get(
    '/api/skills',
    {
      preHandler: requireUser,
      doc: {
        tag: 'skills',
        summary: "List the caller's skills catalog",
        description: "Shipped, operator and the caller's own skills (theirs shadow shared ones).",
        responses: { 200: { description: 'The catalog.', json: SkillList } },
      },
    },
    async (request) => {
      const list = await (await skills).list(request.userId);
      return {
        skills: list.map(({ name, description, source }) => ({ name, description, source })),
      } satisfies SkillList;
    },
  );

  app.post(
    '/api/skills',
    {
      body: UploadSkillRequest,
      onRequest: requireUser,
      limit: limits.rate('writes'),
      bodyLimit: SKILL_UPLOAD_BODY_LIMIT,
      doc: {
        tag: 'skills',
        summary: "Add or replace one of the caller's skills",
        description:
          'A SKILL.md text, or a zip of the skill folder in base64 (at most 2 MiB). Every problem ' +
          'with the skill is a field error of a 400; 409 `conflict` when the caller has too many.',
        responses: {
          200: { description: 'Replaced.', json: UploadSkillResponse },
          201: { description: 'Added.', json: UploadSkillResponse },
        },
        errors: ['conflict'],
      },
    },
    async (request, reply) => {
      const body = request.body;
      const parsed = await parseSkillUpload(
        'skill_md' in body
          ? { kind: 'markdown', text: body.skill_md }
          : { kind: 'zip', data: Buffer.from(body.zip_base64, 'base64') },
      );
      if (!parsed.ok) {
        throw new AppError('invalid_request', 'invalid skill', parsed.problems);
      }
      try {
        const { created } = await (await skills).repository.put(request.userId, parsed.value);
        const answer = {
          name: parsed.value.frontMatter.name,
          description: parsed.value.frontMatter.description,
          created,
        } satisfies UploadSkillResponse;
        return reply.status(created ? 201 : 200).send(answer);
      } catch (error) {
        if (error instanceof TooManySkillsError) throw new AppError('conflict', error.message);
        throw error;
      }
    },
  );

  app.delete(
    '/api/skills/:name',
    {
      preHandler: requireUser,
      limit: limits.rate('writes'),
      doc: {
        tag: 'skills',
        summary: "Delete one of the caller's skills",
        parameters: [{ in: 'path', name: 'name', description: 'The skill name.' }],
        responses: { 204: { description: 'Deleted.' } },
        errors: ['not_found'],
      },
    },
    async (request, reply) => {
      if (!(await (await skills).repository.delete(request.userId, request.params.name))) {
        throw new AppError('not_found', `skill ${request.params.name} not found`);
      }
      return reply.status(204).send();
    },
  );
}
