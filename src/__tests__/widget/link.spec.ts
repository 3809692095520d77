/**
 * A saved output's "Open in nsight-lab" link names a session of the store the
 * notebook ran with (issue 22): opened only when this lab's store holds the same
 * session (its UUID) under that id, said so otherwise.
 */
import {
  checkSessionLink,
  parseSessionLink,
  SessionLookup
} from '../../widget/link';

const UUID = '0f8c2a1e-6b1d-4c55-9a39-2f1f4b2a7c10';
const OTHER = '7d9e0b44-1c2a-4e8f-8b1d-5a6c7e8f9a0b';

function storeWith(sessions: Record<number, string>): SessionLookup {
  return async id => (id in sessions ? { uuid: sessions[id] } : null);
}

describe('parseSessionLink', () => {
  it('reads the id and the UUID of a link', () => {
    expect(parseSessionLink(`#nsight-lab/sessions/7?uuid=${UUID}`)).toEqual({
      id: 7,
      uuid: UUID
    });
  });

  it('reads an old link (no UUID) by its id', () => {
    expect(parseSessionLink('#nsight-lab/sessions/12')).toEqual({
      id: 12,
      uuid: null
    });
  });

  it('falls back to the session id when the link is absent or unreadable', () => {
    expect(parseSessionLink('', 3)).toEqual({ id: 3, uuid: null });
    expect(parseSessionLink('javascript:alert(1)', 4)).toEqual({
      id: 4,
      uuid: null
    });
    expect(parseSessionLink(undefined, 0)).toBeNull();
    expect(parseSessionLink('#nsight-lab/sessions/0')).toBeNull();
  });
});

describe('checkSessionLink', () => {
  it('opens the session when this store holds its UUID under its id', async () => {
    const decision = await checkSessionLink(
      { id: 7, uuid: UUID },
      storeWith({ 7: UUID.toUpperCase() }),
      '/home/me/store.sqlite'
    );
    expect(decision).toEqual({ open: 7 });
  });

  it('says so when this store has no session of that id', async () => {
    const decision = await checkSessionLink(
      { id: 7, uuid: UUID },
      storeWith({ 1: OTHER }),
      '/home/me/store.sqlite'
    );
    expect(decision).not.toHaveProperty('open');
    expect('message' in decision && decision.message).toMatch(
      /^session 7 of this output is not in this lab's store \(\/home\/me\/store\.sqlite\)/
    );
  });

  it('refuses another profile under the same id, naming both', async () => {
    const decision = await checkSessionLink(
      { id: 7, uuid: UUID },
      storeWith({ 7: OTHER }),
      'postgresql://team@db/nsight'
    );
    expect(decision).not.toHaveProperty('open');
    const message = 'message' in decision ? decision.message : '';
    expect(message).toContain('is another profile');
    expect(message).toContain(UUID);
    expect(message).toContain('postgresql://team@db/nsight');
    expect(message.split('\n')).toHaveLength(1);
  });

  it('opens an old link by its id, without a look-up', async () => {
    const lookup = jest.fn<ReturnType<SessionLookup>, [number]>();
    const decision = await checkSessionLink({ id: 5, uuid: null }, lookup, 'x');
    expect(decision).toEqual({ open: 5 });
    expect(lookup).not.toHaveBeenCalled();
  });
});
